import { Cron } from "croner";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nextRunAt, parseSchedule } from "./schedule.js";
import { cronerExpressionArb } from "./test-support/cron-arbitraries.js";

/**
 * Parity with the gateway agentstate replaces, which asks croner for a job's next run from the
 * moment it computes it (`new Cron(expr, { timezone }).nextRun(new Date(now))`). The oracle is
 * croner, called here directly. Not `nextRuns(n)`: it steps croner's internal wall-clock date, so
 * across a spring-forward it goes back in time (every 15 minutes in New York on 2026-03-08 gives
 * 07:45Z, then 07:00Z again), which no scheduler fires; chaining `nextRun` from each run is what a
 * scheduler sees. Raise CRON_PARITY_RUNS for a longer search.
 */
const NUM_RUNS = Number(process.env.CRON_PARITY_RUNS ?? 300);
const RUNS_PER_CASE = 5;
const HOUR = 3_600_000;

/** Each zone with the instants (UTC) of its 2026 clock changes. */
const ZONES: [string, string[]][] = [
  ["America/New_York", ["2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z"]],
  ["Europe/Berlin", ["2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z"]],
  // Half-hour DST.
  ["Australia/Lord_Howe", ["2026-04-04T15:00:00Z", "2026-10-03T15:30:00Z"]],
  // UTC+12:45 / +13:45.
  ["Pacific/Chatham", ["2026-04-04T14:00:00Z", "2026-09-26T14:00:00Z"]],
  ["Asia/Kolkata", []],
  ["UTC", []],
];

function offsetMinutes(timeZone: string, instant: number): string {
  const format = new Intl.DateTimeFormat("en-US", { timeZone, timeZoneName: "longOffset" });
  return format.formatToParts(instant).find((p) => p.type === "timeZoneName")?.value ?? "";
}

/** What croner says, run after run: the next run from the previous one. */
function cronerRuns(expr: string, timeZone: string, start: number): number[] {
  const cron = new Cron(expr, { timezone: timeZone });
  const runs: number[] = [];
  let after = start;
  while (runs.length < RUNS_PER_CASE) {
    let next = cron.nextRun(new Date(after));
    // In a fall-back's repeated hour croner can answer a run already past; its own sequence
    // continues from that run, so a scheduler takes the first of those after `after`.
    while (next !== null && next.getTime() <= after) next = cron.nextRun(next);
    if (next === null) break;
    runs.push(next.getTime());
    after = next.getTime();
  }
  return runs;
}

/** What a cron job's schedule says, run after run (stagger 0), as the cron store computes it. */
function scheduledRuns(expr: string, timeZone: string, start: number, viaDefault: boolean) {
  const raw = viaDefault ? { kind: "cron", expr } : { kind: "cron", expr, tz: timeZone };
  const schedule = parseSchedule(raw, viaDefault ? timeZone : "UTC");
  const context = { jobId: "parity", createdAt: 0, lastRunAt: null };
  const runs: number[] = [];
  let after: number | null = start;
  while (runs.length < RUNS_PER_CASE) {
    after = nextRunAt(schedule, after, context);
    if (after === null) break;
    runs.push(after);
  }
  return runs;
}

/** Expressions that run often enough to run inside an hour that a clock change skips or repeats. */
const frequentArb = fc.constantFrom(
  "*/5 * * * *",
  "*/30 * * * *",
  "0,30 * * * *",
  "15,45 1-3 * * *",
  "30 2 * * *",
  "*/20 * * * * *",
  "0 */15 * * * *",
);

/** A start `min`…`max` ms from one of the zones' clock changes. */
function nearChange(min: number, max: number) {
  return fc
    .tuple(
      fc.constantFrom(...ZONES.filter(([, changes]) => changes.length > 0)),
      fc.nat(1),
      fc.integer({ min, max }),
    )
    .map(([[zone, changes], which, delta]) => ({
      zone,
      start: Date.parse(changes[which] as string) + delta,
    }));
}

const startArb = fc.oneof(
  { weight: 3, arbitrary: nearChange(-6 * HOUR, 6 * HOUR) },
  { weight: 3, arbitrary: nearChange(-HOUR, 2 * HOUR) },
  {
    weight: 1,
    arbitrary: fc.record({
      zone: fc.constantFrom(...ZONES.map(([zone]) => zone)),
      start: fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2032, 0, 1) }),
    }),
  },
);

describe("cron schedules agree with croner", () => {
  it("the listed clock changes are real (guards the start instants)", () => {
    for (const [zone, changes] of ZONES) {
      for (const change of changes) {
        const at = Date.parse(change);
        expect(offsetMinutes(zone, at - 60_000), `${zone} ${change}`).not.toBe(
          offsetMinutes(zone, at),
        );
      }
    }
  });

  it("the next runs of random expressions in random zones around DST changes (property)", () => {
    fc.assert(
      fc.property(
        fc.oneof(cronerExpressionArb, frequentArb),
        startArb,
        fc.boolean(),
        (expr, { zone, start }, viaDefault) => {
          const expected = cronerRuns(expr, zone, start);
          const actual = scheduledRuns(expr, zone, start, viaDefault);
          const show = (runs: number[]) => runs.map((t) => new Date(t).toISOString());
          expect(show(actual), `${expr} in ${zone} after ${new Date(start).toISOString()}`).toEqual(
            show(expected),
          );
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });
});
