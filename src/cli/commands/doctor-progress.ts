import cliProgress from "cli-progress";
import type { ColdIndexProgress } from "../../doctor/cold-index-rebuild.js";
import type { DoctorProgress } from "../../doctor/fix.js";
import { formatBytes, truncateMiddle } from "../output.js";

interface Reporter<P> {
  update: (progress: P) => void;
  stop: () => void;
}

/**
 * A progress bar on stderr, only when stderr is a terminal, gone when done: `measure` gives the
 * value, the total and the format's other fields of each report.
 */
function terminalBar<P>(
  format: string,
  measure: (progress: P) => { value: number; total: number; payload: Record<string, string> },
): Reporter<P> | undefined {
  if (!process.stderr.isTTY) return undefined;
  const bar = new cliProgress.SingleBar(
    {
      format,
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
    update(progress) {
      const { value, total, payload } = measure(progress);
      if (!started) {
        bar.start(Math.max(total, 1), value, payload);
        started = true;
      } else {
        // Each agent a cold index rebuild works through has its own total.
        bar.setTotal(Math.max(total, 1));
        bar.update(value, payload);
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

/** The import's bar: sources and bytes. */
export function progressReporter(): Reporter<DoctorProgress> | undefined {
  return terminalBar("importing [{bar}] {percentage}% | {done}/{size} | {file}", (p) => ({
    value: p.bytesDone,
    total: p.bytesTotal,
    payload: {
      done: formatBytes(p.bytesDone),
      size: formatBytes(p.bytesTotal),
      // One terminal line: a wrapped bar cannot be redrawn or cleared.
      file: truncateMiddle(p.source.path, 40),
    },
  }));
}

/** A cold index rebuild's bar: events indexed again, by agent. */
export function coldIndexProgressReporter(): Reporter<ColdIndexProgress> | undefined {
  return terminalBar(
    "cold index [{bar}] {percentage}% | {value}/{total} events | {agent}",
    (p) => ({
      value: p.done,
      total: p.total,
      payload: { agent: truncateMiddle(p.agentId, 40) },
    }),
  );
}
