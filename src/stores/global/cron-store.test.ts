import { Cron } from "croner";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cronExpressionArb } from "../../schedule/test-support/cron-arbitraries.js";
import { type CronJobDefinition, CronStore } from "./cron-store.js";
import {
  expectStateError,
  rowCount,
  simulatedClock,
  useGlobalDb,
} from "./test-support/global-db.js";

const openDb = useGlobalDb();
const MIN = 60_000;
const HOUR = 60 * MIN;

function cron(options: { keepRunsPerJob?: number } = {}) {
  const clock = simulatedClock(Date.UTC(2026, 4, 6, 12, 0, 0));
  const db = openDb();
  return {
    db,
    clock,
    store: new CronStore(db, { clock: clock.now, defaultTimeZone: "UTC", ...options }),
  };
}

/** A job as the legacy jobs file holds it. */
function legacyJob(
  id: string,
  schedule: CronJobDefinition["schedule"],
  extra = {},
): CronJobDefinition {
  return {
    id,
    name: `job ${id}`,
    enabled: true,
    createdAtMs: Date.UTC(2026, 4, 1),
    schedule,
    sessionTarget: "isolated",
    wakeMode: "now",
    payload: { kind: "agentTurn", message: "Summarize the inbox", timeoutSeconds: 30 },
    delivery: { mode: "announce", channel: "discord", to: "channel:1" },
    state: {},
    ...extra,
  };
}

describe("CronStore jobs", () => {
  it("adds a job, keeps its definition verbatim and computes its first run", () => {
    const { store, clock } = cron();
    const job = store.add(
      legacyJob("morning", { kind: "cron", expr: "30 6 * * 1-5", tz: "America/New_York" }),
    );
    expect(job).toMatchObject({
      jobId: "morning",
      name: "job morning",
      enabled: true,
      payload: { kind: "agentTurn", message: "Summarize the inbox", timeoutSeconds: 30 },
      nextRunAt: Date.UTC(2026, 4, 7, 10, 30),
      lastRunAt: null,
      lastStatus: null,
      consecutiveErrors: 0,
      createdAt: Date.UTC(2026, 4, 1),
      updatedAt: clock.now(),
    });
    expect(job.definition).toEqual(
      legacyJob("morning", { kind: "cron", expr: "30 6 * * 1-5", tz: "America/New_York" }),
    );
    expect(store.get("morning")).toEqual(job);
    expectStateError(
      () => store.add(legacyJob("morning", { kind: "every", everyMs: 1000 })),
      "E_CONFLICT",
      /already exists/,
    );
    expectStateError(
      () => store.add(legacyJob("bad", { kind: "cron", expr: "61 * * * *" })),
      "E_INVALID_ARGUMENT",
      /"61 \* \* \* \*": Invalid value for minute: 61/,
    );
    expectStateError(
      () => store.add({ schedule: { kind: "every", everyMs: 5 } } as never),
      "E_INVALID_ARGUMENT",
      /job id/,
    );
  });

  it("seeds runtime state from a legacy job's state and accepts jobId for id", () => {
    const { store } = cron();
    const job = store.add({
      ...legacyJob("x", { kind: "every", everyMs: 1_800_000, anchorMs: 1772929758254 }),
      id: undefined as never,
      jobId: "legacy-id",
      state: {
        nextRunAtMs: 1777000000000,
        lastRunAtMs: 1776999000000,
        lastStatus: "error",
        lastError: "timeout",
        lastDurationMs: 7,
        consecutiveErrors: 2,
      },
    });
    expect(job).toMatchObject({
      jobId: "legacy-id",
      nextRunAt: 1777000000000,
      lastRunAt: 1776999000000,
      lastStatus: "error",
      lastError: "timeout",
      lastDurationMs: 7,
      consecutiveErrors: 2,
    });
  });

  it("restores runtime state from a jobs-state sidecar entry", () => {
    const { store, clock } = cron();
    store.add(legacyJob("j", { kind: "every", everyMs: HOUR, anchorMs: Date.UTC(2026, 4, 6) }));
    const state = {
      lastRunAtMs: 1000,
      lastRunStatus: "ok",
      lastDurationMs: 12,
      consecutiveErrors: 0,
      consecutiveSkipped: 1,
    };
    expect(store.restoreState("j", { ...state, nextRunAtMs: 5000 })).toMatchObject({
      nextRunAt: 5000,
      lastRunAt: 1000,
      lastStatus: "ok",
      lastDurationMs: 12,
      updatedAt: clock.now(),
    });
    expect(store.restoreState("j", state).nextRunAt).toBe(Date.UTC(2026, 4, 6, 13));
    expectStateError(() => store.restoreState("j", "{}" as never), "E_INVALID_ARGUMENT");
    expectStateError(() => store.restoreState("missing", state), "E_NOT_FOUND");
  });

  it("updates a definition, recomputing the next run only when timing changes", () => {
    const { store, clock } = cron();
    store.add(legacyJob("j", { kind: "every", everyMs: HOUR, anchorMs: Date.UTC(2026, 4, 6) }));
    expect(store.get("j")?.nextRunAt).toBe(Date.UTC(2026, 4, 6, 13));
    clock.advance(2 * HOUR);
    expect(store.update("j", { name: "renamed" })).toMatchObject({
      name: "renamed",
      nextRunAt: Date.UTC(2026, 4, 6, 13),
    });
    expect(store.update("j", { enabled: false })).toMatchObject({
      enabled: false,
      nextRunAt: null,
    });
    expect(store.update("j", { enabled: true }).nextRunAt).toBe(Date.UTC(2026, 4, 6, 15));
    const changed = store.update("j", (job) => ({
      ...job,
      schedule: { kind: "cron", expr: "0 0 * * *" },
    }));
    expect(changed.nextRunAt).toBe(Date.UTC(2026, 4, 7));
    expect(changed.definition.schedule).toEqual({ kind: "cron", expr: "0 0 * * *" });
    expectStateError(
      () => store.update("j", { id: "k" }),
      "E_INVALID_ARGUMENT",
      /cannot change its id/,
    );
    expectStateError(() => store.update("nope", { name: "x" }), "E_NOT_FOUND", /no cron job nope/);
  });

  it("lists jobs by agent and enabled state, and removes a job with its run log", () => {
    const { store, db } = cron();
    store.add(legacyJob("a", { kind: "every", everyMs: HOUR }, { agentId: "main" }));
    store.add(
      legacyJob("b", { kind: "every", everyMs: HOUR }, { agentId: "google", enabled: false }),
    );
    store.add(legacyJob("c", { kind: "every", everyMs: HOUR }, { agentId: "main" }));
    expect(store.list().map((j) => j.jobId)).toEqual(["a", "b", "c"]);
    expect(store.list({ agentId: "main" }).map((j) => j.jobId)).toEqual(["a", "c"]);
    expect(store.list({ enabled: false }).map((j) => j.jobId)).toEqual(["b"]);
    expect(store.list({ after: "a", limit: 1 }).map((j) => j.jobId)).toEqual(["b"]);
    store.recordRun("a", { status: "ok", ranAt: 1 });
    expect(store.remove("a")).toBe(true);
    expect(store.remove("a")).toBe(false);
    expect(rowCount(db, "cron_run_logs")).toBe(0);
  });
});

describe("CronStore runs", () => {
  it("due() returns enabled jobs whose time has come, earliest first", () => {
    const { store, clock } = cron();
    const now = clock.now();
    store.add(legacyJob("later", { kind: "at", atMs: now + HOUR }));
    store.add(legacyJob("first", { kind: "at", at: new Date(now - HOUR).toISOString() }));
    store.add(legacyJob("second", { kind: "at", atMs: now - MIN }));
    store.add(legacyJob("off", { kind: "at", atMs: now - HOUR }, { enabled: false }));
    expect(store.due(now).map((j) => j.jobId)).toEqual(["first", "second"]);
    expect(store.due(now + HOUR).map((j) => j.jobId)).toEqual(["first", "second", "later"]);
    expect(store.due(now, { limit: 1 }).map((j) => j.jobId)).toEqual(["first"]);
    expect(store.nextDueAt()).toBe(now - HOUR);
  });

  it("recordRun updates runtime state and appends the log row in one transaction", () => {
    const { store, db, clock } = cron();
    store.add(legacyJob("j", { kind: "cron", expr: "0 * * * *" }));
    const ranAt = clock.now();
    const failed = store.recordRun("j", {
      status: "error",
      ranAt,
      durationMs: 1500,
      error: "model timeout",
      record: { sessionId: "s1" },
    });
    expect(failed).toMatchObject({
      lastRunAt: ranAt,
      lastStatus: "error",
      lastError: "model timeout",
      lastDurationMs: 1500,
      consecutiveErrors: 1,
      nextRunAt: ranAt + HOUR,
    });
    store.recordRun("j", { status: "skipped", ranAt: ranAt + HOUR });
    expect(store.get("j")?.consecutiveErrors).toBe(1);
    expect(store.recordRun("j", { status: "ok", ranAt: ranAt + 2 * HOUR }).consecutiveErrors).toBe(
      0,
    );
    expect(store.runs("j").map((r) => [r.status, r.ranAt])).toEqual([
      ["ok", ranAt + 2 * HOUR],
      ["skipped", ranAt + HOUR],
      ["error", ranAt],
    ]);
    expect(store.runs("j", { limit: 1 })[0]?.record).toEqual({});
    expect(store.runs("j").at(-1)).toMatchObject({
      durationMs: 1500,
      error: "model timeout",
      record: { sessionId: "s1" },
    });
    // A log row that cannot be written leaves the job untouched.
    const before = store.get("j");
    expectStateError(
      () =>
        store.recordRun("j", {
          status: "ok",
          ranAt: ranAt + 3 * HOUR,
          record: { summary: "x".repeat(300_000) },
        }),
      "E_TOO_LARGE",
    );
    expect(store.get("j")).toEqual(before);
    expect(rowCount(db, "cron_run_logs")).toBe(3);
    expectStateError(
      () => store.recordRun("j", { status: "finished" as never, ranAt }),
      "E_INVALID_ARGUMENT",
    );
    expectStateError(() => store.recordRun("gone", { status: "ok", ranAt }), "E_NOT_FOUND");
  });

  it("a one-shot job runs once", () => {
    const { store, clock } = cron();
    const at = clock.now() + MIN;
    store.add(legacyJob("once", { kind: "at", atMs: at }));
    expect(store.due(at).map((j) => j.jobId)).toEqual(["once"]);
    expect(store.recordRun("once", { status: "ok", ranAt: at }).nextRunAt).toBeNull();
    expect(store.due(at + HOUR)).toEqual([]);
  });

  it("lists runs by when they ran, newest first, whatever order they were logged in", () => {
    const { store } = cron({ keepRunsPerJob: 4 });
    store.add(legacyJob("a", { kind: "every", everyMs: HOUR }));
    // Runs recorded live, then older runs imported from a legacy log, one of them a tie.
    for (const ranAt of [50, 60]) store.recordRun("a", { status: "ok", ranAt });
    for (const ranAt of [10, 60, 30, 20]) store.logs.importRun("a", { status: "skipped", ranAt });
    const runs = store.runs("a");
    expect(runs.map((r) => [r.ranAt, r.status])).toEqual([
      [60, "skipped"],
      [60, "ok"],
      [50, "ok"],
      [30, "skipped"],
    ]);
    // Pages continue from the last row of the previous page; retention dropped the oldest runs.
    const first = store.runs("a", { limit: 2 });
    const rest = store.runs("a", { limit: 2, before: first.at(-1)?.id as number });
    expect([...first, ...rest]).toEqual(runs);
    expect(store.logs.prune(1)).toBe(3);
    expect(store.runs("a").map((r) => [r.ranAt, r.status])).toEqual([[60, "skipped"]]);
  });

  it("keeps the newest keepRunsPerJob log rows per job, by SQL", () => {
    const { store, db } = cron({ keepRunsPerJob: 3 });
    store.add(legacyJob("a", { kind: "every", everyMs: HOUR }));
    for (let i = 1; i <= 5; i++) store.recordRun("a", { status: "ok", ranAt: i });
    for (let i = 1; i <= 2; i++) store.logs.append("deleted-job", { status: "error", ranAt: i });
    expect(store.runs("a").map((r) => r.ranAt)).toEqual([5, 4, 3]);
    const oldest = store.runs("a").at(-1)?.id as number;
    expect(store.runs("a", { before: oldest })).toEqual([]);
    expect(store.logs.prune(1)).toBe(3);
    expect(rowCount(db, "cron_run_logs")).toBe(2);
  });
});

/** Expected next runs, computed without the store or the schedule module. */
function modelNext(
  kind: string,
  spec: { everyMs: number; anchor: number; atMs: number; expr: string; zone: string },
  after: number,
  lastRunAt: number | null,
) {
  if (kind === "every") {
    let next = spec.anchor;
    while (next <= after) next += spec.everyMs;
    return next;
  }
  if (kind === "at") return lastRunAt !== null && lastRunAt >= spec.atMs ? null : spec.atMs;
  // Croner, as the gateway calls it; these zones have no clock changes to step around.
  const next = new Cron(spec.expr, { timezone: spec.zone }).nextRun(new Date(after));
  return next === null ? null : next.getTime();
}

describe("CronStore on a simulated clock (property)", () => {
  it("due() returns exactly the jobs whose next run has come, across every/cron/at schedules", () => {
    const job = fc.record({
      kind: fc.constantFrom("every", "cron", "at"),
      everyMs: fc.integer({ min: MIN, max: 6 * HOUR }),
      anchorDelta: fc.integer({ min: -10 * HOUR, max: 2 * HOUR }),
      atDelta: fc.integer({ min: -2 * HOUR, max: 20 * HOUR }),
      expr: cronExpressionArb,
      zone: fc.constantFrom("UTC", "Asia/Kolkata"),
    });
    const tick = fc.record({
      wait: fc.integer({ min: 1, max: 3 * HOUR }),
      duration: fc.integer({ min: 0, max: 10 * MIN }),
      ok: fc.boolean(),
    });
    const { store, db, clock } = cron();
    fc.assert(
      fc.property(
        fc.array(job, { minLength: 1, maxLength: 6 }),
        fc.array(tick, { maxLength: 25 }),
        (jobs, ticks) => {
          db.exec("DELETE FROM cron_jobs");
          const start = clock.now();
          const model = jobs.map((j, i) => {
            const spec = {
              everyMs: j.everyMs,
              anchor: start + j.anchorDelta,
              atMs: start + j.atDelta,
              expr: j.expr,
              zone: j.zone,
            };
            const schedule =
              j.kind === "every"
                ? { kind: "every" as const, everyMs: j.everyMs, anchorMs: spec.anchor }
                : j.kind === "at"
                  ? { kind: "at" as const, atMs: spec.atMs }
                  : { kind: "cron" as const, expr: j.expr, tz: j.zone };
            store.add(legacyJob(`j${i}`, schedule));
            return { id: `j${i}`, kind: j.kind, spec, next: modelNext(j.kind, spec, start, null) };
          });
          for (const { wait, duration, ok } of ticks) {
            const now = clock.advance(wait);
            const expected = model.filter((m) => m.next !== null && m.next <= now).map((m) => m.id);
            const due = store.due(now);
            expect(due.map((j) => j.jobId).sort()).toEqual(expected.sort());
            for (const j of due) {
              const ran = store.recordRun(j.jobId, {
                status: ok ? "ok" : "error",
                ranAt: now,
                durationMs: duration,
              });
              const m = model.find((x) => x.id === j.jobId) as (typeof model)[number];
              m.next = modelNext(m.kind, m.spec, now + duration, now);
              expect(ran.nextRunAt).toBe(m.next);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
