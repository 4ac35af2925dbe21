import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { nextRunAt, parseSchedule } from "./schedule.js";
import { checkTimeZone } from "./time-zone.js";

const iso = (ms: number | null | undefined) => (ms == null ? ms : new Date(ms).toISOString());
const utc = (text: string) => Date.parse(text);
const context = { jobId: "job-1", createdAt: 0, lastRunAt: null };

/** The next `count` runs of a cron job in `tz` after `after`, each computed from the one before. */
function runs(expr: string, tz: string, after: string, count = 1): (string | null | undefined)[] {
  const schedule = parseSchedule({ kind: "cron", expr, tz }, "UTC");
  const out: (string | null | undefined)[] = [];
  let from: number | null = utc(after);
  for (let i = 0; i < count && from !== null; i++) {
    from = nextRunAt(schedule, from, context);
    out.push(iso(from));
  }
  return out;
}

describe("time zones", () => {
  it("refuses a zone Intl does not know", () => {
    expect(() => checkTimeZone("Mars/Olympus")).toThrow(/unknown time zone "Mars\/Olympus"/);
    expect(checkTimeZone("Australia/Lord_Howe")).toBe("Australia/Lord_Howe");
  });
});

describe("cron schedules run when croner says", () => {
  it("both day fields restricted: either may match, even when one is a step (croner's default)", () => {
    expect(runs("0 0 */2 * 5", "UTC", "2026-05-02T00:00:00Z")).toEqual([
      "2026-05-03T00:00:00.000Z",
    ]);
  });

  it("L, nth weekday and nearest weekday are accepted and run", () => {
    expect(runs("0 0 L * *", "UTC", "2026-05-02T00:00:00Z", 2)).toEqual([
      "2026-05-31T00:00:00.000Z",
      "2026-06-30T00:00:00.000Z",
    ]);
    expect(runs("0 0 * * 5#2", "UTC", "2026-05-02T00:00:00Z", 2)).toEqual([
      "2026-05-08T00:00:00.000Z",
      "2026-06-12T00:00:00.000Z",
    ]);
    // 2026-08-15 is a Saturday: the nearest weekday is Friday the 14th.
    expect(runs("0 0 15W * *", "UTC", "2026-07-16T00:00:00Z", 2)).toEqual([
      "2026-08-14T00:00:00.000Z",
      "2026-09-15T00:00:00.000Z",
    ]);
  });

  it("a fall-back: each wall time runs at its first occurrence, then the clock goes on", () => {
    // New York, 2026-11-01: 02:00 EDT (06:00Z) falls back to 01:00 EST; 01:00-01:59 repeat.
    expect(runs("*/30 * * * *", "America/New_York", "2026-11-01T04:45:00Z", 5)).toEqual([
      "2026-11-01T05:00:00.000Z",
      "2026-11-01T05:30:00.000Z",
      "2026-11-01T07:00:00.000Z",
      "2026-11-01T07:30:00.000Z",
      "2026-11-01T08:00:00.000Z",
    ]);
    // Asked during the repeated hour, croner answers 01:30 EDT, already past: the run after it.
    expect(runs("*/30 * * * *", "America/New_York", "2026-11-01T06:10:00Z")).toEqual([
      "2026-11-01T07:00:00.000Z",
    ]);
    expect(runs("30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", 2)).toEqual([
      "2026-11-01T05:30:00.000Z",
      "2026-11-02T06:30:00.000Z",
    ]);
  });

  it("a spring-forward: a skipped wall time runs as late as the clocks jumped", () => {
    // New York, 2026-03-08: 02:00 EST (07:00Z) jumps to 03:00 EDT; 02:30 runs at 03:30 EDT.
    expect(runs("30 2 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2)).toEqual([
      "2026-03-08T07:30:00.000Z",
      "2026-03-09T06:30:00.000Z",
    ]);
    // Lord Howe, 2026-10-04: 02:00 (15:30Z) jumps half an hour to 02:30.
    expect(runs("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z")).toEqual([
      "2026-10-03T15:45:00.000Z",
    ]);
  });

  it("runs in the schedule's zone, to the second with six fields", () => {
    expect(runs("0 9 * * *", "Asia/Kathmandu", "2026-05-06T00:00:00Z")).toEqual([
      "2026-05-06T03:15:00.000Z",
    ]);
    expect(runs("30 6 * * 1-5", "America/New_York", "2026-05-08T10:30:00Z")).toEqual([
      "2026-05-11T10:30:00.000Z",
    ]);
    expect(runs("30 */10 * * * *", "UTC", "2026-05-06T10:00:31Z", 2)).toEqual([
      "2026-05-06T10:10:30.000Z",
      "2026-05-06T10:20:30.000Z",
    ]);
    expect(runs("0 0 * * *", "UTC", "2026-05-06T00:00:00Z")).toEqual(["2026-05-07T00:00:00.000Z"]);
  });

  it("an expression croner refuses is E_INVALID_ARGUMENT naming it and why", () => {
    try {
      parseSchedule({ kind: "cron", expr: "61 * * * *", tz: "UTC" }, "UTC");
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
      expect((error as Error).message).toMatch(/"61 \* \* \* \*".*minute: 61/);
    }
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
