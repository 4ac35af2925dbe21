import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type MaintenancePlan, planMaintenance } from "./plan.js";
import type { EffectiveRules, MaintenancePolicy, MaintenanceRules, RuleSources } from "./policy.js";
import type { SessionFacts } from "./protection.js";

const DAY = 24 * 60 * 60 * 1000;
const NOW = 1_800_000_000_000;
const RUNS = Number(process.env.AGENTSTATE_PLAN_RUNS ?? 200);

const sources = Object.fromEntries(
  ["mode", "coldAfterDays", "pruneAfterDays", "keepRecent", "maxDiskBytes", "highWaterBytes"].map(
    (k) => [k, "test"],
  ),
) as RuleSources;

const rulesArb: fc.Arbitrary<EffectiveRules> = fc
  .record({
    coldAfterDays: fc.option(fc.integer({ min: 0, max: 60 })),
    pruneAfterDays: fc.option(fc.integer({ min: 0, max: 120 })),
    keepRecent: fc.option(fc.integer({ min: 0, max: 3 })),
    maxDiskBytes: fc.option(fc.integer({ min: 0, max: 5_000_000 })),
  })
  .map((r): EffectiveRules => {
    const rules: MaintenanceRules = {
      mode: "enforce",
      ...r,
      highWaterBytes: r.maxDiskBytes === null ? null : Math.floor(r.maxDiskBytes * 0.8),
    };
    return { ...rules, sources };
  });

/** A protection signal, set in about one session of twelve: most sessions stay plannable. */
const rare = fc.integer({ min: 0, max: 11 }).map((n) => n === 0);

const factsArb = (agentId: string, n: number): fc.Arbitrary<SessionFacts> =>
  fc.record({
    agentId: fc.constant(agentId),
    sessionId: fc.constant(`s${n}`),
    sessionNo: fc.constant(n),
    sessionKey: fc.option(fc.constantFrom("k1", "k2", "k3")),
    createdAt: fc.integer({ min: NOW - 400 * DAY, max: NOW }),
    lastActivityAt: fc.integer({ min: NOW - 400 * DAY, max: NOW }),
    ended: fc.boolean(),
    archived: fc.boolean(),
    cold: fc.boolean(),
    events: fc.integer({ min: 0, max: 50 }),
    hotBytes: fc.integer({ min: 0, max: 400_000 }),
    coldBytes: fc.integer({ min: 0, max: 100_000 }),
    indexBytes: fc.integer({ min: 0, max: 200_000 }),
    pinned: rare,
    running: rare,
    forkParent: rare,
    compactionSource: rare,
    pendingDelivery: rare,
    pendingTask: rare,
  });

const homeArb = fc
  .tuple(fc.integer({ min: 0, max: 14 }), fc.integer({ min: 0, max: 8 }))
  .chain(([a, b]) =>
    fc.record({
      sessions: fc.tuple(
        ...Array.from({ length: a }, (_, i) => factsArb("main", i + 1)),
        ...Array.from({ length: b }, (_, i) => factsArb("ops", i + 1)),
      ),
      home: rulesArb,
      ops: fc.option(rulesArb),
      total: fc.integer({ min: 0, max: 8_000_000 }),
    }),
  );

/** The test's own reading of the rules: signals and recent activity protect. */
function isProtected(s: SessionFacts): boolean {
  const signals = [
    s.pinned,
    s.running,
    s.forkParent,
    s.compactionSource,
    s.pendingDelivery,
    s.pendingTask,
  ];
  return NOW - s.lastActivityAt < DAY || signals.some(Boolean);
}

function newestOfKey(sessions: readonly SessionFacts[], s: SessionFacts, keep: number): boolean {
  if (s.sessionKey === null) return false;
  const newer = sessions.filter(
    (o) =>
      o.agentId === s.agentId &&
      o.sessionKey === s.sessionKey &&
      (o.createdAt > s.createdAt || (o.createdAt === s.createdAt && o.sessionNo > s.sessionNo)),
  );
  return newer.length < keep;
}

function check(
  plan: MaintenancePlan,
  sessions: readonly SessionFacts[],
  policy: MaintenancePolicy,
): void {
  const seen = new Set<string>();
  for (const action of plan.actions) {
    const key = `${action.agentId}/${action.sessionId}`;
    expect(seen.has(key), `one action per session: ${key}`).toBe(false);
    seen.add(key);
    const s = sessions.find(
      (x) => x.agentId === action.agentId && x.sessionId === action.sessionId,
    );
    if (s === undefined) throw new Error(`planned a session that does not exist: ${key}`);
    expect(isProtected(s), `planned a protected session: ${key}`).toBe(false);
    if (action.action === "cold") expect(s.cold || s.events === 0).toBe(false);
    if (action.action === "prune") {
      expect(s.archived || s.ended).toBe(true);
      const keep = (policy.agents[s.agentId] ?? policy.home).keepRecent ?? 0;
      expect(newestOfKey(sessions, s, keep), `pruned one of the newest of its key: ${key}`).toBe(
        false,
      );
    }
  }
}

describe("planMaintenance (property)", () => {
  it("never plans a protected session, never prunes a live one or one of its key's newest", () => {
    const planned = { cold: 0, prune: 0 };
    fc.assert(
      fc.property(homeArb, ({ sessions, home, ops, total }) => {
        const policy: MaintenancePolicy = {
          file: "agentstate.json",
          fileFound: true,
          home,
          agents: ops === null ? {} : { ops },
        };
        const bytes = {
          total,
          agents: { main: Math.floor(total / 2), ops: Math.floor(total / 3) },
        };
        const plan = planMaintenance({ policy, sessions, bytes, now: NOW });
        check(plan, sessions, policy);
        for (const a of plan.actions) planned[a.action]++;
        const flagged = plan.protected.map((p) => `${p.agentId}/${p.sessionId}`).sort();
        const expected = sessions
          .filter(isProtected)
          .map((s) => `${s.agentId}/${s.sessionId}`)
          .sort();
        expect(flagged).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
    // The property is only worth something if plans were not all empty.
    expect(planned.cold).toBeGreaterThan(0);
    expect(planned.prune).toBeGreaterThan(0);
  });

  it("is a pure function of its input: the same input, the same plan", () => {
    fc.assert(
      fc.property(homeArb, ({ sessions, home, total }) => {
        const policy: MaintenancePolicy = { file: "f", fileFound: true, home, agents: {} };
        const input = { policy, sessions, bytes: { total, agents: {} }, now: NOW };
        expect(planMaintenance(input)).toEqual(planMaintenance(input));
      }),
      { numRuns: 50 },
    );
  });
});
