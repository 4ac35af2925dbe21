import { rejectUnknownOptions } from "../db/options.js";
import type { StateHome } from "../home.js";
import { collectGarbage, type GcOptions, type GcReport } from "./collect-garbage.js";

export interface GcScheduleOptions {
  /** Time between the end of one run and the start of the next (at least 1,000 ms). */
  everyMs: number;
  /** Delay before the first run (default: `everyMs`). */
  firstInMs?: number;
  /** Told each run's report. */
  onReport?: (report: GcReport) => void;
  /** Told what made a run fail; the schedule goes on. Default: the error is dropped. */
  onError?: (error: unknown) => void;
  /** Passed to each run; `maintenance` defaults to the home's policy with no overrides. */
  gc?: GcOptions;
}

export interface GcSchedule {
  /** Runs now, off the timer, and returns the report. */
  runNow(): GcReport;
  /** No run starts after this; a run under way (synchronous) has already finished. */
  stop(): void;
  /** Runs done so far. */
  readonly runs: number;
}

const OPTION_KEYS = ["everyMs", "firstInMs", "onReport", "onError", "gc"];

/**
 * Runs `agentstate gc`'s work on a timer in a long-running process (`serve`, a gateway): the
 * home's maintenance policy (`agentstate.json`, read afresh each run, so an operator's edit takes
 * effect at the next run), expired rows, retention, and each agent's `quick_check` canary. Runs
 * never overlap (the next is timed from the end of the last), and the timer does not keep the
 * process alive.
 */
export function scheduleGc(home: StateHome, options: GcScheduleOptions): GcSchedule {
  rejectUnknownOptions(options, OPTION_KEYS, "scheduleGc");
  const { everyMs, firstInMs = everyMs, onReport, onError } = options;
  if (!Number.isInteger(everyMs) || everyMs < 1000) {
    throw new TypeError("Expected scheduleGc({ everyMs }) to be an integer of at least 1000");
  }
  const gc: GcOptions = { maintenance: {}, ...options.gc };
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let runs = 0;
  const runNow = (): GcReport => {
    const report = collectGarbage(home, Date.now(), gc);
    runs++;
    onReport?.(report);
    return report;
  };
  const arm = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      try {
        runNow();
      } catch (error) {
        onError?.(error);
      }
      arm(everyMs);
    }, ms);
    timer.unref();
  };
  arm(firstInMs);
  return {
    runNow,
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    get runs() {
      return runs;
    },
  };
}
