import { StateError } from "../db/errors.js";

/**
 * Wall-clock arithmetic in IANA time zones with nothing but `Intl`. A "wall time" is the local
 * calendar date and clock time of a zone, encoded as the UTC milliseconds of the same fields, so
 * plain `Date.UTC` arithmetic walks the calendar.
 */

const DAY_MS = 86_400_000;
/** Longer than any backward clock change (DST is at most 2 h), shorter than two of them. */
const FALL_BACK_WINDOW_MS = 6 * 3_600_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, format);
  }
  return format;
}

/** Returns `timeZone` if `Intl` knows it (`"UTC"`, `"America/New_York"` …), else E_INVALID_ARGUMENT. */
export function checkTimeZone(timeZone: unknown): string {
  try {
    if (typeof timeZone !== "string" || timeZone === "") throw new RangeError("not a string");
    formatter(timeZone);
    return timeZone;
  } catch (error) {
    throw new StateError("E_INVALID_ARGUMENT", `unknown time zone ${JSON.stringify(timeZone)}`, {
      cause: error,
    });
  }
}

/** The host's zone: what a schedule without `tz` has always meant in the legacy scheduler. */
export function hostTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** The zone's offset from UTC at an instant, in ms (whole seconds). */
export function offsetAt(timeZone: string, instant: number): number {
  if (timeZone === "UTC") return 0;
  const fields: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(instant)) {
    if (part.type !== "literal") fields[part.type] = Number(part.value);
  }
  const { year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = fields;
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  return wall - Math.floor(instant / 1000) * 1000;
}

export function wallTimeAt(timeZone: string, instant: number): number {
  return instant + offsetAt(timeZone, instant);
}

/** The first instant in (low, high] whose offset differs from the offset at `low` (one change). */
function changeBetween(timeZone: string, low: number, high: number): number {
  const before = offsetAt(timeZone, low);
  let lo = low;
  let hi = high;
  // Offsets change on whole seconds: stop at one-second resolution.
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (offsetAt(timeZone, mid) === before) lo = mid;
    else hi = mid;
  }
  return Math.floor(hi / 1000) * 1000;
}

/**
 * The latest wall time the zone's clocks have shown up to `instant`. Usually the wall time at
 * `instant`; during the hour a fall-back repeats, the wall time just before the clocks went back.
 */
export function wallHighWater(timeZone: string, instant: number): number {
  const now = wallTimeAt(timeZone, instant);
  const earlier = instant - FALL_BACK_WINDOW_MS;
  const offsetEarlier = offsetAt(timeZone, earlier);
  if (offsetEarlier <= offsetAt(timeZone, instant)) return now;
  const change = changeBetween(timeZone, earlier, instant);
  return Math.max(now, change - 1 + offsetEarlier);
}

/**
 * The first instant at which the zone's clocks show `wall` or later. A wall time that occurs twice
 * (fall-back) maps to its first occurrence; one skipped by a spring-forward maps to the moment of
 * the change, when the clocks jump past it.
 */
export function instantReaching(timeZone: string, wall: number): number {
  const offsetBefore = offsetAt(timeZone, wall - DAY_MS);
  const offsetAfter = offsetAt(timeZone, wall + DAY_MS);
  const early = wall - Math.max(offsetBefore, offsetAfter);
  if (wallTimeAt(timeZone, early) === wall) return early;
  const late = wall - Math.min(offsetBefore, offsetAfter);
  if (wallTimeAt(timeZone, late) === wall) return late;
  // Skipped: the clocks were behind `wall` at `early` and past it at `late`.
  return changeBetween(timeZone, early, late);
}
