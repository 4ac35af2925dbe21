import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { agentDbRelativePath, openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runPlan } from "./run.js";
import {
  ageSession,
  DAY,
  message,
  SEEDED_POLICY,
  seedHome,
  startSession,
  writeConfig,
} from "./test-support/seed-home.js";

const tempDir = useTempDirs();

function seeded(): { state: StateHome; seed: ReturnType<typeof seedHome> } {
  const state = openStateHome({ home: tempDir() });
  const seed = seedHome(state);
  writeConfig(state.path, SEEDED_POLICY);
  return { state, seed };
}

/** Session ids by what the rows say now: cold (a cold_sessions row), gone (no sessions row). */
function rowsOf(state: StateHome) {
  const db = state.agent("main").db;
  const ids = (sql: string) =>
    db
      .prepare<{ id: string }>(sql)
      .all()
      .map((r) => r.id)
      .sort();
  return {
    cold: ids("SELECT s.session_id AS id FROM cold_sessions c JOIN sessions s USING (session_no)"),
    present: ids("SELECT session_id AS id FROM sessions"),
  };
}

describe("home.maintenance", () => {
  it("plans cold moves for idle sessions (current or not) and prunes of ended and archived ones past keepRecent", () => {
    const { state, seed } = seeded();
    const plan = state.maintenance.plan();
    const of = (kind: string) =>
      plan.actions
        .filter((a) => a.action === kind)
        .map((a) => a.sessionId)
        .sort();
    expect(of("cold")).toEqual([...seed.expectCold].sort());
    expect(of("prune")).toEqual([...seed.expectPrune].sort());
    expect(plan.policy.home.coldAfterDays).toBe(30);
    expect(plan.policy.home.sources.coldAfterDays).toBe("agentstate.json");
    state.close();
  });

  it.each(
    Object.entries({
      "fresh-1": "active",
      "pinned-1": "pinned",
      "pinned-2": "pinned",
      "fork-parent": "fork-parent",
      "compact-1": "compaction-source",
      "deliver-1": "pending-delivery",
      "busy-1": "running",
      "task-1": "pending-task",
    }),
  )("never moves or prunes %s (protected: %s)", (sessionId, rule) => {
    const { state } = seeded();
    const plan = state.maintenance.plan();
    expect(plan.actions.map((a) => a.sessionId)).not.toContain(sessionId);
    expect(plan.protected.find((p) => p.sessionId === sessionId)?.protections).toContain(rule);
    state.maintenance.run();
    const rows = rowsOf(state);
    expect(rows.present).toContain(sessionId);
    expect(rows.cold).not.toContain(sessionId);
    state.close();
  });

  it("with no agentstate.json plans nothing and changes nothing", () => {
    const state = openStateHome({ home: tempDir() });
    seedHome(state);
    const before = rowsOf(state);
    expect(state.maintenance.plan().actions).toEqual([]);
    expect(state.maintenance.run().outcomes).toEqual([]);
    expect(rowsOf(state)).toEqual(before);
    state.close();
  });

  it("in warn mode reports every planned action as warned and changes nothing", () => {
    const { state } = seeded();
    const before = rowsOf(state);
    const report = state.maintenance.run({ overrides: { mode: "warn" } });
    expect(report.outcomes.length).toBeGreaterThan(0);
    expect(new Set(report.outcomes.map((o) => o.status))).toEqual(new Set(["warned"]));
    expect(rowsOf(state)).toEqual(before);
    state.close();
  });

  it("skips, and reports, a session that became active or pinned between the plan and the run", () => {
    const { state } = seeded();
    const plan = state.maintenance.plan();
    const agent = state.agent("main");
    agent.transcripts.append("idle-1", message("back again"));
    agent.sessions.patch("agent:main:arch", (e) => ({ ...e, pinnedAt: Date.now() }));
    const report = runPlan(state, plan);
    const outcome = (id: string) => report.outcomes.find((o) => o.sessionId === id);
    expect(outcome("idle-1")).toMatchObject({ status: "skipped", protections: ["active"] });
    expect(outcome("arch-1")).toMatchObject({ status: "skipped", protections: ["pinned"] });
    const rows = rowsOf(state);
    expect(rows.cold).not.toContain("idle-1");
    expect(rows.present).toContain("arch-1");
    expect(outcome("reset-1")?.status).toBe("done");
    state.close();
  });

  it("honours pruneAfterDays: with 365, a session ended 200 days ago is moved, not deleted", () => {
    const { state } = seeded();
    const plan = state.maintenance.plan({ overrides: { pruneAfterDays: 365 } });
    expect(plan.actions.filter((a) => a.action === "prune")).toEqual([]);
    expect(plan.actions.find((a) => a.sessionId === "reset-1")?.action).toBe("cold");
    expect(plan.actions.find((a) => a.sessionId === "reset-1")?.reason).toMatch(/idle 200 days/);
    state.close();
  });

  it("names an agent whose database it cannot read, and still maintains the others", () => {
    const home = tempDir();
    let state = openStateHome({ home });
    for (const agentId of ["damaged", "healthy"]) {
      const agent = state.agent(agentId);
      startSession(agent, "k", `${agentId}-1`, 60, 400);
      ageSession(agent, `${agentId}-1`, Date.now() - 100 * DAY);
    }
    state.close();
    // The root page of the events table overwritten: the schema still opens, reads fail.
    const path = join(home, agentDbRelativePath("damaged"));
    const raw = openRawSqlite(path, { fileMustExist: true });
    const pageSize = raw.pragma("page_size", { simple: true }) as number;
    const root = raw
      .prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'transcript_events'")
      .get() as {
      rootpage: number;
    };
    raw.close();
    const fd = openSync(path, "r+");
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (root.rootpage - 1) * pageSize);
    closeSync(fd);
    writeConfig(home, { maintenance: { coldAfterDays: 30 } });
    state = openStateHome({ home, create: false });
    const report = state.maintenance.run();
    expect(report.unreadable.map((u) => u.agentId)).toEqual(["damaged"]);
    expect(report.outcomes.map((o) => [o.sessionId, o.status])).toEqual([["healthy-1", "done"]]);
    expect(state.agent("healthy").transcripts.cold.isCold("healthy-1")).toBe(true);
    state.close();
  });
});
