import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AgentState, openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { ageSession, DAY, startSession, writeConfig } from "./test-support/seed-home.js";

const tempDir = useTempDirs();
const RUNS = Number(process.env.AGENTSTATE_MAINTENANCE_RUNS ?? 6);

const sessionArb = fc.record({
  key: fc.constantFrom("k1", "k2", "k3"),
  events: fc.integer({ min: 1, max: 5 }),
  idleDays: fc.integer({ min: 0, max: 200 }),
});

const caseArb = fc.record({
  sessions: fc.array(sessionArb, { minLength: 1, maxLength: 7 }),
  archived: fc.subarray(["k1", "k2", "k3"]),
  pinned: fc.subarray(["k1", "k2", "k3"]),
  policy: fc.record({
    coldAfterDays: fc.option(fc.integer({ min: 0, max: 100 })),
    pruneAfterDays: fc.option(fc.integer({ min: 0, max: 150 })),
    keepRecent: fc.option(fc.integer({ min: 0, max: 2 })),
    maxDiskBytes: fc.option(fc.integer({ min: 100_000, max: 2_000_000 })),
  }),
});

function exports(agent: AgentState): Map<string, string> {
  const ids = agent.db.prepare<{ id: string }>("SELECT session_id AS id FROM sessions").all();
  return new Map(ids.map(({ id }) => [id, [...agent.transcripts.exportJsonl(id)].join("")]));
}

describe("runPlan (property)", () => {
  it("loses no event: every session it does not prune exports as before, and only planned prunes go", () => {
    fc.assert(
      fc.property(caseArb, ({ sessions, archived, pinned, policy }) => {
        const state = openStateHome({ home: tempDir() });
        const agent = state.agent("main");
        for (const [i, s] of sessions.entries()) {
          startSession(agent, `agent:main:${s.key}`, `s${i}`, s.events);
        }
        for (const [i, s] of sessions.entries()) {
          ageSession(agent, `s${i}`, Date.now() - s.idleDays * DAY);
        }
        for (const key of archived)
          agent.sessions.patch(`agent:main:${key}`, (e) => ({ ...e, archivedAt: 1 }));
        for (const key of pinned)
          agent.sessions.patch(`agent:main:${key}`, (e) => ({ ...e, pinnedAt: 1 }));
        writeConfig(state.path, { maintenance: policy });
        const before = exports(agent);
        const report = state.maintenance.run();
        const after = exports(agent);
        const done = (kind: string) =>
          report.outcomes
            .filter((o) => o.action === kind && o.status === "done")
            .map((o) => o.sessionId);
        expect(report.outcomes.every((o) => o.status === "done")).toBe(true);
        expect([...before.keys()].filter((id) => !after.has(id)).sort()).toEqual(
          done("prune").sort(),
        );
        for (const [id, text] of after) expect(text, id).toBe(before.get(id));
        for (const id of done("cold")) expect(agent.transcripts.cold.isCold(id)).toBe(true);
        state.close();
      }),
      { numRuns: RUNS },
    );
  });
});
