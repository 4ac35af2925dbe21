import { Cron } from "croner";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cronExpressionArb } from "../schedule/test-support/cron-arbitraries.js";
import {
  type CronJobDefinition,
  type CronJobPatch,
  CronStore,
} from "../stores/global/cron-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import { BACKENDS, rejects, useControlPlanes } from "./test-support/control-planes.js";

// Cron on every backend, as control-plane.test.ts does the queue: each test runs on the embedded
// SQLite control plane and on a real PostgreSQL, rows counted through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();
const MIN = 60_000;
const HOUR = 60 * MIN;
const START = Date.UTC(2026, 4, 6, 12);

function job(id: string, schedule: CronJobDefinition["schedule"], extra = {}): CronJobDefinition {
  return {
    id,
    name: `job ${id}`,
    createdAtMs: Date.UTC(2026, 4, 1),
    schedule,
    payload: { kind: "agentTurn", message: `run ${id}` },
    delivery: { mode: "announce", channel: "discord" },
    ...extra,
  };
}

describe.each(BACKENDS)("control plane on %s: cron jobs", (backend) => {
  const setup = async () => {
    const clock = simulatedClock(START);
    const options = { clock: clock.now, cron: { defaultTimeZone: "UTC", keepRunsPerJob: 3 } };
    const opened = await open(backend, options);
    // The oracle of parity: CronStore itself, on its own SQLite database and the same clock.
    const store = new CronStore(openDb(), options.cron && { ...options.cron, clock: clock.now });
    return { ...opened, cron: opened.cp.cron, clock, options, store };
  };

  it("adds, gets, lists, updates and removes jobs exactly as CronStore does", async () => {
    const { cron, store, clock, count } = await setup();
    const defs = [
      job("b-morning", { kind: "cron", expr: "30 6 * * 1-5", tz: "America/New_York" }),
      job(
        "a-hourly",
        { kind: "every", everyMs: HOUR, anchorMs: START - 10 * MIN },
        { agentId: "ops" },
      ),
      job("c-once", { kind: "at", atMs: START + MIN }, { agentId: "ops", enabled: false }),
      job(
        "d-legacy",
        { kind: "cron", expr: "0 0 * * *" },
        { state: { nextRunAtMs: 5, lastStatus: "error", consecutiveErrors: 2 } },
      ),
    ];
    for (const def of defs) expect(await cron.add(def)).toEqual(store.add(def));
    expect((await cron.get("b-morning"))?.nextRunAt).toBe(Date.UTC(2026, 4, 7, 10, 30));
    expect(await cron.get("nope")).toBeUndefined();
    for (const options of [
      {},
      { agentId: "ops" },
      { enabled: false },
      { after: "a-hourly", limit: 2 },
    ]) {
      expect(await cron.list(options)).toEqual(store.list(options));
    }
    expect((await cron.list()).map((j) => j.jobId)).toEqual([
      "a-hourly",
      "b-morning",
      "c-once",
      "d-legacy",
    ]);
    await rejects(cron.add(defs[0] as CronJobDefinition), "E_CONFLICT", /already exists/);
    await rejects(cron.add(job("bad", { kind: "cron", expr: "61 * * * *" })), "E_INVALID_ARGUMENT");
    clock.advance(7 * MIN);
    // A name alone keeps the runtime state; enabling recomputes the next run from now.
    for (const [id, patch] of [
      ["a-hourly", { name: "renamed" }],
      ["c-once", { enabled: true }],
      [
        "b-morning",
        (d: CronJobDefinition): CronJobDefinition => ({
          ...d,
          schedule: { kind: "every", everyMs: MIN },
        }),
      ],
    ] as [string, CronJobPatch][]) {
      expect(await cron.update(id, patch)).toEqual(store.update(id, patch));
    }
    await rejects(cron.update("a-hourly", { id: "other" }), "E_INVALID_ARGUMENT", /change its id/);
    await rejects(cron.update("gone", { name: "x" }), "E_NOT_FOUND");
    const ran = { status: "ok" as const, ranAt: clock.now(), durationMs: 10 };
    expect(await cron.recordRun("a-hourly", ran)).toEqual(store.recordRun("a-hourly", ran));
    expect(await count("cron_run_logs", "job_id = 'a-hourly'")).toBe(1);
    expect(await cron.remove("a-hourly")).toBe(true);
    expect(await cron.remove("a-hourly")).toBe(false);
    expect(await count("cron_run_logs")).toBe(0);
    expect(await count("cron_jobs")).toBe(3);
  });

  it("records runs as CronStore does: state, log newest first, retention, nothing on a bad record", async () => {
    const { cron, store, clock, count } = await setup();
    const def = job("j", { kind: "cron", expr: "0 * * * *" });
    await cron.add(def);
    store.add(def);
    const runs = [
      {
        status: "error",
        ranAt: START,
        durationMs: 1500,
        error: "model timeout",
        record: { sessionId: "s1" },
      },
      { status: "skipped", ranAt: START + HOUR },
      { status: "ok", ranAt: START + 2 * HOUR },
      { status: "ok", ranAt: START + 3 * HOUR, record: { usage: { tokens: 12 } } },
    ] as const;
    for (const run of runs) {
      clock.advance(MIN);
      expect(await cron.recordRun("j", run)).toEqual(store.recordRun("j", run));
    }
    expect(await cron.get("j")).toMatchObject({
      consecutiveErrors: 0,
      nextRunAt: START + 4 * HOUR,
    });
    // keepRunsPerJob is 3: the oldest run went, by SQL, on both.
    const logged = await cron.runs("j");
    expect(logged.map((r) => [r.status, r.ranAt])).toEqual(
      store.runs("j").map((r) => [r.status, r.ranAt]),
    );
    expect(logged.map((r) => r.ranAt)).toEqual([START + 3 * HOUR, START + 2 * HOUR, START + HOUR]);
    expect(logged[0]?.record).toEqual({ usage: { tokens: 12 } });
    const page = await cron.runs("j", { limit: 2 });
    const rest = await cron.runs("j", { before: page.at(-1)?.id as number });
    expect([...page, ...rest]).toEqual(logged);
    const before = await cron.get("j");
    await rejects(
      cron.recordRun("j", { status: "ok", ranAt: START, record: { summary: "x".repeat(300_000) } }),
      "E_TOO_LARGE",
    );
    await rejects(
      cron.recordRun("j", { status: "finished" as never, ranAt: START }),
      "E_INVALID_ARGUMENT",
    );
    await rejects(cron.recordRun("gone", { status: "ok", ranAt: START }), "E_NOT_FOUND");
    expect(await cron.get("j")).toEqual(before);
    expect(await count("cron_run_logs")).toBe(3);
  });

  it("gives each of 50 due jobs to exactly one of 4 racing control planes", async () => {
    const { cp, another, clock, count } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    for (let i = 0; i < 50; i++) {
      await cp.cron.add(job(`j${String(i).padStart(2, "0")}`, { kind: "at", atMs: START - i }));
    }
    await cp.cron.add(job("later", { kind: "at", atMs: START + HOUR }));
    const claimed = await Promise.all(
      hosts.map(async (host, h) => {
        const mine = [];
        for (;;) {
          const batch = await host.cron.claimDue(`host-${h}`, { leaseMs: MIN, limit: 3 });
          if (batch.length === 0) return mine;
          mine.push(...batch);
        }
      }),
    );
    const ids = claimed.flat().map((j) => j.jobId);
    expect(ids.length).toBe(50);
    expect(new Set(ids).size).toBe(50);
    expect(ids).not.toContain("later");
    expect(new Set(claimed.flat().map((j) => j.claimId)).size).toBe(50);
    for (const [h, mine] of claimed.entries()) {
      expect(
        mine.every((j) => j.claimOwner === `host-${h}` && j.claimExpiresAt === START + MIN),
      ).toBe(true);
    }
    expect(await count("cron_jobs", "claim_owner IS NOT NULL")).toBe(50);
    expect(await cp.cron.claimDue("late-host", { leaseMs: MIN })).toEqual([]);
    // Each host settles its own claims; a one-shot job then never comes back.
    for (const [h, mine] of claimed.entries()) {
      for (const j of mine) {
        await hosts[h]?.cron.recordRun(
          j.jobId,
          { status: "ok", ranAt: START },
          { claimId: j.claimId },
        );
      }
    }
    expect(await count("cron_jobs", "claim_id IS NULL AND next_run_at IS NULL")).toBe(50);
    expect(await count("cron_run_logs")).toBe(50);
    clock.advance(HOUR);
    expect((await cp.cron.claimDue("h", { leaseMs: MIN })).map((j) => j.jobId)).toEqual(["later"]);
  });

  it("a lapsed claim goes to the next claimer, and the old claimer's recordRun is refused", async () => {
    const { cron, clock, count } = await setup();
    await cron.add(job("early", { kind: "every", everyMs: HOUR, anchorMs: START - 2 * MIN }));
    await cron.add(job("late", { kind: "every", everyMs: HOUR, anchorMs: START - MIN }));
    // Both first run an hour after their anchors: 58 and 59 minutes from now.
    const t0 = clock.advance(HOUR);
    const [first] = await cron.claimDue("crashed", { leaseMs: 10_000, limit: 1 });
    expect(first).toMatchObject({
      jobId: "early",
      claimOwner: "crashed",
      claimExpiresAt: t0 + 10_000,
    });
    clock.advance(9_999);
    expect((await cron.claimDue("other", { leaseMs: 10_000 })).map((j) => j.jobId)).toEqual([
      "late",
    ]);
    clock.advance(1);
    const [second] = await cron.claimDue("other", { leaseMs: 10_000 });
    expect(second).toMatchObject({ jobId: "early", claimOwner: "other" });
    expect(second?.claimId).not.toBe(first?.claimId);
    const lost = await rejects(
      cron.recordRun("early", { status: "ok", ranAt: t0 }, { claimId: first?.claimId as string }),
      "E_CONFLICT",
      /lapsed and other holds it now/,
    );
    expect(lost.details).toMatchObject({ jobId: "early", owner: "other" });
    expect(await count("cron_run_logs")).toBe(0);
    const ranAt = clock.now();
    const settled = await cron.recordRun(
      "early",
      { status: "ok", ranAt },
      { claimId: second?.claimId as string },
    );
    expect(settled.nextRunAt).toBe(START - 2 * MIN + 2 * HOUR);
    await rejects(
      cron.recordRun("early", { status: "ok", ranAt }, { claimId: second?.claimId as string }),
      "E_CONFLICT",
      /settled already/,
    );
    // A claim that lapsed while nobody took the job over still settles.
    clock.advance(HOUR);
    const [slow] = await cron.claimDue("slow", { leaseMs: 1_000, limit: 1 });
    clock.advance(5_000);
    await cron.recordRun(
      slow?.jobId as string,
      { status: "ok", ranAt: clock.now() },
      { claimId: slow?.claimId as string },
    );
    expect(await count("cron_run_logs")).toBe(2);
    await rejects(cron.claimDue("x", { leaseMs: 0 }), "E_INVALID_ARGUMENT");
  });

  it("computes each next run from when the run finished, as croner does (property)", async () => {
    const { cron, clock } = await setup();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        cronExpressionArb,
        fc.constantFrom("UTC", "Asia/Kolkata", "America/Sao_Paulo"),
        fc.array(
          fc.record({
            wait: fc.integer({ min: 1, max: 40 * HOUR }),
            duration: fc.integer({ min: 0, max: 10 * MIN }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        async (expr, tz, ticks) => {
          const id = `p${++n}`;
          const added = await cron.add(job(id, { kind: "cron", expr, tz }));
          const oracle = (after: number) =>
            new Cron(expr, { timezone: tz }).nextRun(new Date(after))?.getTime() ?? null;
          let expected = oracle(clock.now());
          expect(added.nextRunAt).toBe(expected);
          for (const { wait, duration } of ticks) {
            const now = clock.advance(wait);
            const claimed = await cron.claimDue("h", { leaseMs: MIN });
            expect(claimed.map((j) => j.jobId)).toEqual(
              expected !== null && expected <= now ? [id] : [],
            );
            for (const j of claimed) {
              const run = { status: "ok" as const, ranAt: now, durationMs: duration };
              const ran = await cron.recordRun(id, run, { claimId: j.claimId });
              expected = oracle(now + duration);
              expect(ran.nextRunAt).toBe(expected);
            }
          }
          await cron.remove(id);
        },
      ),
      { numRuns: 15 },
    );
  });

  it("waitForDue answers at once when a job is due, skips claimed ones, and wakes on another host's add", async () => {
    const { another } = await setup();
    const real = await another({ clock: Date.now, cron: { defaultTimeZone: "UTC" } });
    const other = await another({ clock: Date.now, cron: { defaultTimeZone: "UTC" } });
    expect(await real.cron.waitForDue(50)).toBe(false);
    await real.cron.add(job("now", { kind: "at", atMs: Date.now() - 1 }));
    expect(await real.cron.waitForDue(5_000)).toBe(true);
    // Claimed by another host: not due here until the claim lapses.
    await other.cron.claimDue("other", { leaseMs: HOUR });
    expect(await real.cron.waitForDue(50)).toBe(false);
    const started = Date.now();
    const waiting = real.cron.waitForDue(10_000);
    setTimeout(
      () => void other.cron.add(job("tomorrow", { kind: "at", atMs: Date.now() + 24 * HOUR })),
      100,
    );
    expect(await waiting).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    await other.cron.add(job("soon", { kind: "at", atMs: Date.now() + 150 }));
    expect(await real.cron.waitForDue(5_000)).toBe(true);
  });
});
