import cliProgress from "cli-progress";
import type { DoctorProgress } from "../../doctor/fix.js";
import { formatBytes, truncateMiddle } from "../output.js";

/** A progress bar on stderr (sources and bytes), only when stderr is a terminal; gone when done. */
export function progressReporter():
  | { update: (p: DoctorProgress) => void; stop: () => void }
  | undefined {
  if (!process.stderr.isTTY) return undefined;
  const bar = new cliProgress.SingleBar(
    {
      format: "importing [{bar}] {percentage}% | {done}/{size} | {file}",
      stream: process.stderr,
      hideCursor: true,
      // The report follows on stdout; a bar left on the terminal would sit in the middle of it.
      clearOnComplete: true,
      barsize: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(p) {
      const payload = {
        done: formatBytes(p.bytesDone),
        size: formatBytes(p.bytesTotal),
        // One terminal line: a wrapped bar cannot be redrawn or cleared.
        file: truncateMiddle(p.source.path, 40),
      };
      if (!started) {
        bar.start(Math.max(p.bytesTotal, 1), p.bytesDone, payload);
        started = true;
      } else bar.update(p.bytesDone, payload);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
