import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { type CronExpression, matchesWallTime, parseCronExpression } from "./cron-expression.js";
import { nextCronRun, nextRunAt, parseSchedule } from "./schedule.js";
import { cronExpressionArb } from "./test-support/cron-arbitraries.js";
import { checkTimeZone, instantReaching, offsetAt, wallHighWater } from "./time-zone.js";

const MIN = 60_000;
const HOUR = 60 * MIN;
const iso = (ms: number | null | undefined) => (ms == null ? ms : new Date(ms).toISOString());
const utc = (text: string) => Date.parse(text);
const context = { jobId: "job-1", createdAt: 0, lastRunAt: null };

/** An independent wall clock for the oracle: the zone's calendar fields straight from Intl. */
const oracleFormats = new Map<string, Intl.DateTimeFormat>();
function oracleWall(timeZone: string, instant: number): number {
  let format = oracleFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-GB", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
    });
    oracleFormats.set(timeZone, format);
  }
  const parts = format.formatToParts(instant);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"));
}

/**
 * The definition, checked minute by minute: a run happens at the first minute when the zone's
 * clock shows a matching wall time it had not shown before (the highest wall time seen so far).
 */
function oracleNextRun(cron: CronExpression, timeZone: string, after: number, horizon: number) {
  let shown = -Infinity;
  for (let t = Math.floor((after - 6 * HOUR) / MIN) * MIN; t <= after; t += MIN) {
    shown = Math.max(shown, oracleWall(timeZone, t));
  }
  for (let t = Math.floor(after / MIN) * MIN + MIN; t <= after + horizon; t += MIN) {
    const wall = oracleWall(timeZone, t);
    for (let w = Math.floor(shown / MIN) * MIN + MIN; w <= wall; w += MIN) {
      if (matchesWallTime(cron, w)) return t;
    }
    shown = Math.max(shown, wall);
  }
  return undefined;
}

describe("time zones", () => {
  it("knows offsets, including half- and three-quarter-hour zones and DST", () => {
    expect(offsetAt("America/New_York", utc("2026-01-15T12:00:00Z"))).toBe(-5 * HOUR);
    expect(offsetAt("America/New_York", utc("2026-07-15T12:00:00Z"))).toBe(-4 * HOUR);
    expect(offsetAt("Asia/Kathmandu", utc("2026-07-15T12:00:00Z"))).toBe(5 * HOUR + 45 * MIN);
    expect(offsetAt("Australia/Lord_Howe", utc("2026-01-15T12:00:00Z"))).toBe(11 * HOUR);
    expect(offsetAt("Australia/Lord_Howe", utc("2026-07-15T12:00:00Z"))).toBe(10.5 * HOUR);
    expect(() => checkTimeZone("Mars/Olympus")).toThrow(/unknown time zone "Mars\/Olympus"/);
  });

  it("maps skipped and repeated wall times to the first instant the clock reaches them", () => {
    // New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT at 07:00Z.
    expect(iso(instantReaching("America/New_York", utc("2026-03-08T02:30:00Z")))).toBe(
      "2026-03-08T07:00:00.000Z",
    );
    // 2026-11-01: 02:00 EDT falls back to 01:00 EST at 06:00Z; 01:30 first happens at 05:30Z.
    expect(iso(instantReaching("America/New_York", utc("2026-11-01T01:30:00Z")))).toBe(
      "2026-11-01T05:30:00.000Z",
    );
    // During the repeated hour, the clock has already shown up to 01:59:59.999.
    expect(iso(wallHighWater("America/New_York", utc("2026-11-01T06:10:00Z")))).toBe(
      "2026-11-01T01:59:59.999Z",
    );
    expect(iso(wallHighWater("America/New_York", utc("2026-11-01T07:10:00Z")))).toBe(
      "2026-11-01T02:10:00.000Z",
    );
  });
});

describe("nextCronRun", () => {
  const next = (expr: string, tz: string, after: string) =>
    iso(nextCronRun(parseCronExpression(expr), tz, utc(after)));

  it("runs in the schedule's zone, once per wall-clock time across DST changes", () => {
    expect(next("0 9 * * *", "Asia/Kathmandu", "2026-05-06T00:00:00Z")).toBe(
      "2026-05-06T03:15:00.000Z",
    );
    expect(next("30 6 * * 1-5", "America/New_York", "2026-05-08T10:30:00Z")).toBe(
      "2026-05-11T10:30:00.000Z",
    );
    // Skipped by the spring-forward: runs when the clocks jump past it.
    expect(next("30 2 * * *", "America/New_York", "2026-03-08T06:00:00Z")).toBe(
      "2026-03-08T07:00:00.000Z",
    );
    // Repeated by the fall-back: runs at the first 01:30 only.
    expect(next("30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z")).toBe(
      "2026-11-01T05:30:00.000Z",
    );
    expect(next("30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z")).toBe(
      "2026-11-02T06:30:00.000Z",
    );
    expect(next("*/30 * * * *", "America/New_York", "2026-11-01T05:45:00Z")).toBe(
      "2026-11-01T07:00:00.000Z",
    );
    expect(next("0 0 * * *", "UTC", "2026-05-06T00:00:00Z")).toBe("2026-05-07T00:00:00.000Z");
  });

  it("agrees with a minute-by-minute oracle around DST changes (property)", () => {
    const transitions: [string, string][] = [
      ["America/New_York", "2026-03-08T07:00:00Z"],
      ["America/New_York", "2026-11-01T06:00:00Z"],
      ["Australia/Sydney", "2026-04-04T16:00:00Z"],
      ["Australia/Sydney", "2026-10-03T16:00:00Z"],
      ["Europe/London", "2026-10-25T01:00:00Z"],
      ["Australia/Lord_Howe", "2026-04-04T15:00:00Z"],
      ["Australia/Lord_Howe", "2026-10-03T15:30:00Z"],
      ["Asia/Kathmandu", "2026-06-01T00:00:00Z"],
    ];
    const dstExprs = fc.constantFrom(
      "30 2 * * *",
      "*/5 * * * *",
      "0,30 1-3 * * *",
      "15 1 * * *",
      "45 * * * *",
    );
    const around = fc.tuple(
      fc.constantFrom(...transitions),
      fc.integer({ min: -5 * HOUR, max: 5 * HOUR }),
    );
    const horizon = 36 * HOUR;
    fc.assert(
      fc.property(fc.oneof(dstExprs, cronExpressionArb), around, (expr, [[tz, change], delta]) => {
        const cron = parseCronExpression(expr);
        const after = utc(change) + delta;
        const expected = oracleNextRun(cron, tz, after, horizon);
        const actual = nextCronRun(cron, tz, after);
        if (expected !== undefined)
          expect(iso(actual), `${expr} in ${tz} after ${iso(after)}`).toBe(iso(expected));
        else expect(actual as number).toBeGreaterThan(after + horizon);
      }),
      { numRuns: 150 },
    );
  });
});

describe("schedules", () => {
  it("parses the legacy kinds, infers a missing kind and accepts `interval` for `every`", () => {
    expect(parseSchedule({ kind: "every", everyMs: 300_000, anchorMs: 5 }, "UTC")).toEqual({
      kind: "every",
      everyMs: 300_000,
      anchorMs: 5,
    });
    expect(parseSchedule({ kind: "interval", everyMs: 1000 }, "UTC")).toMatchObject({
      kind: "every",
      anchorMs: null,
    });
    expect(parseSchedule({ everyMs: 1000 }, "UTC").kind).toBe("every");
    expect(parseSchedule({ cron: "0 9 * * *" }, "Asia/Shanghai")).toMatchObject({
      kind: "cron",
      timeZone: "Asia/Shanghai",
    });
    expect(parseSchedule({ kind: "at", at: "2026-02-08T12:40:00.000Z" }, "UTC")).toEqual({
      kind: "at",
      atMs: utc("2026-02-08T12:40:00.000Z"),
    });
    for (const bad of [
      null,
      { kind: "weekly" },
      { kind: "cron" },
      { kind: "every", everyMs: 0 },
      { kind: "at", at: "soon" },
      { kind: "cron", expr: "0 9 * * *", tz: "Nowhere/Else" },
    ]) {
      try {
        parseSchedule(bad, "UTC");
        expect.unreachable(JSON.stringify(bad));
      } catch (error) {
        expect(isStateError(error, "E_INVALID_ARGUMENT"), JSON.stringify(bad)).toBe(true);
      }
    }
  });

  it("every: the first anchor + k × everyMs strictly after `after` (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 ** 7 }),
        fc.integer({ min: 0, max: 10 ** 10 }),
        fc.integer({ min: 0, max: 2 * 10 ** 10 }),
        (everyMs, anchorMs, after) => {
          const next = nextRunAt({ kind: "every", everyMs, anchorMs }, after, context) as number;
          expect(next).toBeGreaterThan(after);
          expect((next - anchorMs) % everyMs).toBe(0);
          expect(next >= anchorMs).toBe(true);
          if (next > anchorMs) expect(next - everyMs).toBeLessThanOrEqual(after);
        },
      ),
    );
  });

  it("at: due once, until a run at or after its time", () => {
    const at = { kind: "at", atMs: 1000 } as const;
    expect(nextRunAt(at, 5000, context)).toBe(1000);
    expect(nextRunAt(at, 5000, { ...context, lastRunAt: 999 })).toBe(1000);
    expect(nextRunAt(at, 5000, { ...context, lastRunAt: 1000 })).toBeNull();
  });

  it("staggers a cron job by a stable offset below staggerMs", () => {
    const schedule = parseSchedule(
      { kind: "cron", expr: "0 * * * *", tz: "UTC", staggerMs: 300_000 },
      "UTC",
    );
    const after = utc("2026-05-06T10:05:00Z");
    const offsets = ["a", "b", "c", "job-1"].map((jobId) => {
      const next = nextRunAt(schedule, after, { ...context, jobId }) as number;
      return next - utc("2026-05-06T11:00:00Z");
    });
    for (const offset of offsets) expect(offset >= 0 && offset < 300_000).toBe(true);
    expect(new Set(offsets).size).toBeGreaterThan(1);
    const again = nextRunAt(schedule, after, context);
    expect(again).toBe(utc("2026-05-06T11:00:00Z") + (offsets[3] as number));
  });
});
