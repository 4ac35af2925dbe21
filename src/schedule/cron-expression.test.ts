import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { nextCronRun, parseCronExpression } from "./cron-expression.js";

const at = (iso: string) => Date.parse(`${iso}Z`);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
/** The next run in UTC strictly after `from`. */
const next = (expr: string, from: string) =>
  iso(nextCronRun(parseCronExpression(expr, "UTC"), at(from)));

describe("parseCronExpression", () => {
  it("rejects malformed expressions, naming the expression and the fault", () => {
    const bad: [unknown, RegExp][] = [
      ["* * * *", /five, six, or seven/],
      ["60 * * * *", /minute: 60/],
      ["* * 0 * *", /day/],
      ["5-1 * * * *", /larger than to value/],
      ["*/0 * * * *", /stepping: 0/],
      ["1-2-3 * * * *", /range/],
      ["10/20 * * * *", /numeric prefix/],
      ["0 0 1 1 * 2027", /dayOfWeek: 2027/],
      ["", /five, six, or seven/],
      [42, /expected a string/],
    ];
    for (const [expr, message] of bad) {
      try {
        parseCronExpression(expr, "UTC");
        expect.unreachable(String(expr));
      } catch (error) {
        expect(isStateError(error, "E_INVALID_ARGUMENT"), String(expr)).toBe(true);
        expect((error as Error).message, String(expr)).toContain(
          `invalid cron expression ${JSON.stringify(String(expr))}`,
        );
        expect((error as Error).message, String(expr)).toMatch(message);
      }
    }
  });

  it("accepts croner's syntax: L, W, #, ?, names, nicknames, seconds and years", () => {
    for (const expr of [
      "0 0 L * *",
      "0 0 LW * *",
      "0 0 15W * *",
      "0 0 * * 5#2",
      "0 0 * * FRI#L",
      "0 0 ? * MON",
      "0 9 * JAN,jul SUN",
      "@hourly",
      "30 */10 * * * *",
      "0 0 0 1 1 * 2030",
    ]) {
      expect(parseCronExpression(expr, "UTC").source).toBe(expr);
    }
  });
});

describe("nextCronRun", () => {
  it("finds the next run for common schedules", () => {
    expect(next("0 9 * * 1", "2026-05-06T10:00:00")).toBe("2026-05-11T09:00:00.000Z");
    expect(next("*/15 7-20 * * 1-5", "2026-05-08T20:50:00")).toBe("2026-05-11T07:00:00.000Z");
    expect(next("0 0 29 2 *", "2026-03-01T00:00:00")).toBe("2028-02-29T00:00:00.000Z");
    // Both day fields restricted: either may match (Vixie cron).
    expect(next("0 0 13 * 5", "2026-05-01T00:00:01")).toBe("2026-05-08T00:00:00.000Z");
    expect(next("0 6 */2 * *", "2026-05-31T07:00:00")).toBe("2026-06-01T06:00:00.000Z");
    expect(next("30 */10 * * * *", "2026-05-06T10:00:31")).toBe("2026-05-06T10:10:30.000Z");
    expect(next("0 0 0 1 1 * 2030", "2026-05-06T10:00:00")).toBe("2030-01-01T00:00:00.000Z");
    // Strictly after: a matching start is not its own next run.
    expect(next("0 9 * * *", "2026-05-06T09:00:00")).toBe("2026-05-07T09:00:00.000Z");
    expect(next("0 9 * * *", "2026-05-06T08:59:59.500")).toBe("2026-05-06T09:00:00.000Z");
    // A date that never comes is accepted, as croner accepts it, and never runs.
    expect(next("0 0 30 2 *", "2026-05-06T10:00:00")).toBeNull();
  });
});
