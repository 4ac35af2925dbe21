import type { Cron } from "croner";
import { StateError } from "../db/errors.js";
import { lazyRequire } from "../lazy-require.js";

const croner = lazyRequire<typeof import("croner")>("croner");

/**
 * A cron expression bound to the time zone it runs in, evaluated by croner exactly as the gateway
 * agentstate replaces evaluates it (`new Cron(expr, { timezone })`, croner's defaults): 5, 6
 * (leading seconds) or 7 (trailing year) fields, names, ranges, steps, lists, `L`, `W`, `#`, `?`,
 * nicknames (`@daily` …), and day-of-month OR day-of-week when both are restricted.
 */
export interface CronExpression {
  readonly source: string;
  readonly timeZone: string;
  readonly cron: Cron;
}

/**
 * A run croner reports at or before the instant asked about happens in the repeated hour of a
 * fall-back (croner maps the wall time to its first occurrence, already past). Croner's own run
 * sequence goes on from that run; so do we. Longer than the runs of a per-second expression
 * through the longest repeated hour.
 */
const MAX_PAST_STEPS = 10_000;

function invalid(source: string, why: string): StateError {
  return new StateError(
    "E_INVALID_ARGUMENT",
    `invalid cron expression ${JSON.stringify(source)}: ${why}`,
  );
}

/** Parses `source` with croner; E_INVALID_ARGUMENT naming the expression and croner's reason. */
export function parseCronExpression(source: unknown, timeZone: string): CronExpression {
  if (typeof source !== "string") throw invalid(String(source), "expected a string");
  try {
    const cron = new (croner().Cron)(source.trim(), { timezone: timeZone });
    return Object.freeze({ source, timeZone, cron });
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : error;
    throw invalid(source, String(why));
  }
}

/** The first run strictly after `after`, as croner computes it, or null if it never runs again. */
export function nextCronRun(expression: CronExpression, after: number): number | null {
  let reference = new Date(after);
  for (let step = 0; step < MAX_PAST_STEPS; step++) {
    const next = expression.cron.nextRun(reference);
    if (next === null) return null;
    if (next.getTime() > after) return next.getTime();
    if (step > 0 && next.getTime() <= reference.getTime()) return null;
    reference = next;
  }
  return null;
}
