import { StateError } from "../db/errors.js";

/**
 * A parsed cron expression: `minute hour day-of-month month day-of-week`, optionally preceded by a
 * seconds field (6 fields, as the legacy scheduler accepted). Each field is a membership table.
 */
export interface CronExpression {
  readonly source: string;
  readonly seconds: readonly boolean[];
  readonly minutes: readonly boolean[];
  readonly hours: readonly boolean[];
  readonly days: readonly boolean[];
  readonly months: readonly boolean[];
  /** 0 = Sunday … 6 = Saturday (7 is accepted for Sunday and folded into 0). */
  readonly weekdays: readonly boolean[];
  /**
   * Vixie cron rule: when both day fields are restricted, a day matches if *either* does; when one
   * starts with `*` (or `?`), both must. `domStar`/`dowStar` record which case applies.
   */
  readonly domStar: boolean;
  readonly dowStar: boolean;
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
const SECOND: FieldSpec = { name: "second", min: 0, max: 59 };
const MINUTE: FieldSpec = { name: "minute", min: 0, max: 59 };
const HOUR: FieldSpec = { name: "hour", min: 0, max: 23 };
const DAY: FieldSpec = { name: "day of month", min: 1, max: 31 };
const MONTH: FieldSpec = { name: "month", min: 1, max: 12, names: MONTHS };
const WEEKDAY: FieldSpec = { name: "day of week", min: 0, max: 7, names: WEEKDAYS };
const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};
/** Days each month can have (February in a leap year). */
const MAX_DAYS = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
// The Gregorian calendar repeats its dates and weekdays every 400 years, so a search that long
// finds a match if there ever is one. Dates alone recur sooner (Feb 29 at most 8 years apart), but
// a date that must also fall on a weekday can take longer: "* * */7 2 5" (the 1st, 8th, 15th, 22nd
// or 29th of February, on a Friday) matches nothing from 2020 to 2030. Months and days that cannot
// match are skipped whole, so even a rare expression costs a few thousand steps.
const SEARCH_YEARS = 400;

function invalid(expr: string, why: string): StateError {
  return new StateError(
    "E_INVALID_ARGUMENT",
    `invalid cron expression ${JSON.stringify(expr)}: ${why}`,
  );
}

function parseValue(text: string, spec: FieldSpec, expr: string): number {
  const named = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return named + (spec === MONTH ? 1 : 0);
  if (!/^\d{1,2}$/.test(text)) throw invalid(expr, `${spec.name} value ${JSON.stringify(text)}`);
  const value = Number(text);
  if (value < spec.min || value > spec.max) {
    throw invalid(expr, `${spec.name} ${value} is outside ${spec.min}-${spec.max}`);
  }
  return value;
}

/** One comma-separated part: `*`, `n`, `a-b`, each optionally `/step`; `n/step` runs to the max. */
function parsePart(part: string, spec: FieldSpec, table: boolean[], expr: string): void {
  const [range = "", stepText, extra] = part.split("/");
  if (extra !== undefined || range === "")
    throw invalid(expr, `${spec.name} part ${JSON.stringify(part)}`);
  const step = stepText === undefined ? 1 : Number(stepText);
  if (!Number.isInteger(step) || step < 1 || !/^\d+$/.test(stepText ?? "1")) {
    throw invalid(expr, `${spec.name} step ${JSON.stringify(stepText)}`);
  }
  if (range === "?" && spec !== DAY && spec !== WEEKDAY) {
    throw invalid(expr, `"?" is only allowed in the day fields`);
  }
  let low = spec.min;
  let high = spec.max;
  if (range !== "*" && range !== "?") {
    const [from = "", to, more] = range.split("-");
    if (more !== undefined) throw invalid(expr, `${spec.name} range ${JSON.stringify(range)}`);
    low = parseValue(from, spec, expr);
    high = to !== undefined ? parseValue(to, spec, expr) : stepText !== undefined ? spec.max : low;
    if (low > high)
      throw invalid(expr, `${spec.name} range ${JSON.stringify(range)} runs backwards`);
  }
  for (let value = low; value <= high; value += step) table[value] = true;
}

function parseField(text: string, spec: FieldSpec, expr: string): boolean[] {
  const table = new Array<boolean>(spec.max + 1).fill(false);
  for (const part of text.split(",")) parsePart(part, spec, table, expr);
  if (spec === WEEKDAY && table[7]) {
    table[0] = true;
    table.length = 7;
  }
  return table;
}

/** Whether some day the expression names exists (`0 0 30 2 *` never fires). */
function canFire(cron: Omit<CronExpression, "source">): boolean {
  if (!cron.domStar && !cron.dowStar) return true;
  for (let month = 1; month <= 12; month++) {
    if (!cron.months[month]) continue;
    for (let day = 1; day <= (MAX_DAYS[month] ?? 0); day++) if (cron.days[day]) return true;
  }
  return false;
}

/** Parses a 5- or 6-field cron expression or a macro (`@daily` …); E_INVALID_ARGUMENT if malformed. */
export function parseCronExpression(source: string): CronExpression {
  if (typeof source !== "string") throw invalid(String(source), "expected a string");
  const expanded = MACROS[source.trim().toLowerCase()] ?? source.trim();
  const fields = expanded.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw invalid(source, `expected 5 or 6 fields, got ${fields.length}`);
  }
  const [sec, min, hour, dom, month, dow] = fields.length === 6 ? fields : ["0", ...fields];
  const cron = {
    seconds: parseField(sec as string, SECOND, source),
    minutes: parseField(min as string, MINUTE, source),
    hours: parseField(hour as string, HOUR, source),
    days: parseField(dom as string, DAY, source),
    months: parseField(month as string, MONTH, source),
    weekdays: parseField(dow as string, WEEKDAY, source),
    domStar: /^[*?]/.test(dom as string),
    dowStar: /^[*?]/.test(dow as string),
  };
  if (!canFire(cron)) throw invalid(source, "no date ever matches its day and month");
  return Object.freeze({ source, ...cron });
}

function dayMatches(cron: CronExpression, date: Date): boolean {
  const dom = cron.days[date.getUTCDate()] === true;
  const dow = cron.weekdays[date.getUTCDay()] === true;
  return cron.domStar || cron.dowStar ? dom && dow : dom || dow;
}

/** Whether a wall-clock time (calendar fields read as UTC) matches, to the second. */
export function matchesWallTime(cron: CronExpression, wall: number): boolean {
  const d = new Date(wall);
  return (
    cron.months[d.getUTCMonth() + 1] === true &&
    dayMatches(cron, d) &&
    cron.hours[d.getUTCHours()] === true &&
    cron.minutes[d.getUTCMinutes()] === true &&
    cron.seconds[d.getUTCSeconds()] === true
  );
}

/**
 * The first matching wall-clock time at or after `from` (calendar fields read as UTC, whole
 * seconds), or undefined if none within the search horizon. Skips whole months, days, hours and
 * minutes that cannot match, so a yearly expression costs a few dozen steps, not a year of minutes.
 */
export function nextWallTime(cron: CronExpression, from: number): number | undefined {
  let t = Math.ceil(from / 1000) * 1000;
  const lastYear = new Date(t).getUTCFullYear() + SEARCH_YEARS;
  for (;;) {
    const d = new Date(t);
    const [year, month, date, hour, minute] = [
      d.getUTCFullYear(),
      d.getUTCMonth(),
      d.getUTCDate(),
      d.getUTCHours(),
      d.getUTCMinutes(),
    ];
    if (year > lastYear) return undefined;
    if (!cron.months[month + 1]) t = Date.UTC(year, month + 1, 1);
    else if (!dayMatches(cron, d)) t = Date.UTC(year, month, date + 1);
    else if (!cron.hours[hour]) t = Date.UTC(year, month, date, hour + 1);
    else if (!cron.minutes[minute]) t = Date.UTC(year, month, date, hour, minute + 1);
    else if (!cron.seconds[d.getUTCSeconds()]) t += 1000;
    else return t;
  }
}
