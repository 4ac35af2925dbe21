import cliProgress from "cli-progress";
import type { DoctorProgress } from "../../doctor/fix.js";
import { formatBytes } from "../output.js";

/** A progress bar on stderr (sources and bytes), only when stderr is a terminal. */
export function progressReporter():
  | { update: (p: DoctorProgress) => void; stop: () => void }
  | undefined {
  if (!process.stderr.isTTY) return undefined;
  const bar = new cliProgress.SingleBar(
    {
      format: "importing [{bar}] {percentage}% | {done}/{size} | {file}",
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(p) {
      const payload = {
        done: formatBytes(p.bytesDone),
        size: formatBytes(p.bytesTotal),
        file: p.source.path,
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
