import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { matchesWallTime, nextWallTime, parseCronExpression } from "./cron-expression.js";
import { cronExpressionArb } from "./test-support/cron-arbitraries.js";

const MINUTE = 60_000;
const at = (iso: string) => Date.parse(`${iso}Z`);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
const members = (table: readonly boolean[]) => table.flatMap((on, i) => (on ? [i] : []));

describe("parseCronExpression", () => {
  it("reads ranges, steps, lists, names and macros", () => {
    const cron = parseCronExpression("*/15 7-20 * * 1-5");
    expect(members(cron.minutes)).toEqual([0, 15, 30, 45]);
    expect(members(cron.hours)).toEqual([7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect(members(cron.weekdays)).toEqual([1, 2, 3, 4, 5]);
    expect(members(cron.seconds)).toEqual([0]);
    expect(members(parseCronExpression("0 9 * JAN,jul SUN").months)).toEqual([1, 7]);
    expect(members(parseCronExpression("0 9 * * 7").weekdays)).toEqual([0]);
    expect(members(parseCronExpression("0 9 * * 5/1").weekdays)).toEqual([0, 5, 6]);
    expect(members(parseCronExpression("10/20 * * * *").minutes)).toEqual([10, 30, 50]);
    expect(members(parseCronExpression("@hourly").minutes)).toEqual([0]);
    expect(members(parseCronExpression("30 */10 * * * *").seconds)).toEqual([30]);
    expect(parseCronExpression("0 0 1 * ?").dowStar).toBe(true);
  });

  it("rejects malformed expressions, naming the fault", () => {
    const bad: [string, RegExp][] = [
      ["* * * *", /5 or 6 fields/],
      ["60 * * * *", /minute 60 is outside 0-59/],
      ["* * 0 * *", /day of month 0/],
      ["5-1 * * * *", /runs backwards/],
      ["*/0 * * * *", /step/],
      ["0 0 L * *", /day of month value "L"/],
      ["0 0 30 2 *", /no date ever matches/],
      ["? * * * *", /only allowed in the day fields/],
      ["1-2-3 * * * *", /range/],
    ];
    for (const [expr, message] of bad) {
      try {
        parseCronExpression(expr);
        expect.unreachable(expr);
      } catch (error) {
        expect(isStateError(error, "E_INVALID_ARGUMENT"), expr).toBe(true);
        expect((error as Error).message, expr).toMatch(message);
      }
    }
  });
});

describe("nextWallTime", () => {
  it("finds the next match for common schedules", () => {
    const next = (expr: string, from: string) =>
      iso(nextWallTime(parseCronExpression(expr), at(from)));
    expect(next("0 9 * * 1", "2026-05-06T10:00:00")).toBe("2026-05-11T09:00:00.000Z");
    expect(next("*/15 7-20 * * 1-5", "2026-05-08T20:50:00")).toBe("2026-05-11T07:00:00.000Z");
    expect(next("0 0 29 2 *", "2026-03-01T00:00:00")).toBe("2028-02-29T00:00:00.000Z");
    // A February day that must also be a Friday: none from 2020 until 2030.
    expect(next("* * */7 2 5", "2020-01-01T00:00:00")).toBe("2030-02-01T00:00:00.000Z");
    // Both day fields restricted: either may match (Vixie cron).
    expect(next("0 0 13 * 5", "2026-05-01T00:00:01")).toBe("2026-05-08T00:00:00.000Z");
    // …but a day field starting with "*" counts as unrestricted, so `*/2` and Friday must both hold.
    expect(next("0 0 */2 * 5", "2026-05-02T00:00:01")).toBe("2026-05-15T00:00:00.000Z");
    expect(next("0 6 */2 * *", "2026-05-31T07:00:00")).toBe("2026-06-01T06:00:00.000Z");
    expect(next("30 */10 * * * *", "2026-05-06T10:00:31")).toBe("2026-05-06T10:10:30.000Z");
    // "At or after": a matching start is itself the answer.
    expect(next("0 9 * * *", "2026-05-06T09:00:00")).toBe("2026-05-06T09:00:00.000Z");
  });

  it("agrees with a minute-by-minute scan (property)", () => {
    const start = fc.integer({ min: at("2020-01-01T00:00:00"), max: at("2035-12-31T00:00:00") });
    fc.assert(
      fc.property(cronExpressionArb, start, (expr, from) => {
        const cron = parseCronExpression(expr);
        const found = nextWallTime(cron, from);
        let scan = Math.ceil(from / MINUTE) * MINUTE;
        const horizon = scan + 3 * 24 * 60 * MINUTE;
        while (scan < horizon && !matchesWallTime(cron, scan)) scan += MINUTE;
        if (scan < horizon) expect(iso(found), expr).toBe(iso(scan));
        else {
          expect(found, expr).toBeDefined();
          expect(found as number).toBeGreaterThanOrEqual(horizon);
          expect(matchesWallTime(cron, found as number)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
