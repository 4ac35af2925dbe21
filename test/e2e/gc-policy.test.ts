import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import {
  ageSession,
  DAY,
  SEEDED_POLICY,
  seedHome,
  startSession,
  writeConfig,
} from "../../src/maintenance/test-support/seed-home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

/** What the rows say, read independently of gc: cold sessions, and sessions that exist at all. */
function rowsOf(home: string) {
  const state = openStateHome({ home, create: false });
  const db = state.agent("main").db;
  const ids = (sql: string) =>
    new Set(
      db
        .prepare<{ id: string }>(sql)
        .all()
        .map((r) => r.id),
    );
  const rows = {
    cold: ids("SELECT s.session_id AS id FROM cold_sessions c JOIN sessions s USING (session_no)"),
    present: ids("SELECT session_id AS id FROM sessions"),
  };
  state.close();
  return rows;
}

/** Every byte of every file under `dir`, by the test's own walk. */
function walk(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sum + walk(path);
    return entry.isFile() ? sum + statSync(path).size : sum;
  }, 0);
}

function seeded(): string {
  const state = openStateHome({ home: tempDir() });
  seedHome(state);
  state.close();
  writeConfig(state.path, SEEDED_POLICY);
  return state.path;
}

interface Action {
  sessionId: string;
  action: "cold" | "prune";
}

describe("agentstate gc: maintenance policy", () => {
  it("does exactly what gc --plan said: the moved and pruned sessions, read from the rows", () => {
    const home = seeded();
    const before = rowsOf(home);
    const planned = cli(["gc", "--plan", "--json", "--home", home]);
    expect(planned.status, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as { actions: Action[] };
    expect(rowsOf(home)).toEqual(before);
    const ran = cli(["gc", "--json", "--home", home]);
    expect(ran.status, ran.stderr).toBe(0);
    const after = rowsOf(home);
    const movedNow = [...after.cold].filter((id) => !before.cold.has(id));
    const prunedNow = [...before.present].filter((id) => !after.present.has(id));
    const of = (kind: string) =>
      plan.actions.filter((a) => a.action === kind).map((a) => a.sessionId);
    expect(movedNow.sort()).toEqual(of("cold").sort());
    expect(prunedNow.sort()).toEqual(of("prune").sort());
    expect(of("cold").length).toBeGreaterThan(0);
    expect(of("prune").length).toBeGreaterThan(0);
    expect(ran.stderr).toMatch(/\[1\/\d+\] (cold|prune) main\//);
  });

  it("prints the effective policy with where each rule came from, and the bytes counted", () => {
    const home = seeded();
    const result = cli(["gc", "--plan", "--home", home, "--cold-after", "45", "--budget", "2GiB"]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("coldAfterDays: 45 (--cold-after)");
    expect(result.stdout).toContain("pruneAfterDays: 90 (agentstate.json)");
    expect(result.stdout).toContain(`maxDiskBytes: ${2 * 1024 ** 3} (--budget)`);
    expect(result.stdout).toContain("highWaterBytes: 1717986918 (80% of maxDiskBytes)");
    expect(result.stdout).toMatch(/Bytes counted: every file under the home directory/);
    expect(result.stdout).toMatch(/main: 6 to move cold .*, 3 to prune/);
  });

  it("changes nothing with --warn, and says what it would have done", () => {
    const home = seeded();
    const before = rowsOf(home);
    const result = cli(["gc", "--json", "--warn", "--home", home]);
    expect(result.status, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.maintenance.outcomes.length).toBe(9);
    expect(
      report.maintenance.outcomes.every((o: { status: string }) => o.status === "warned"),
    ).toBe(true);
    expect(rowsOf(home)).toEqual(before);
  });

  it("names the key path at fault in agentstate.json, exit 2", () => {
    const home = seeded();
    writeConfig(home, { maintenance: { agents: { main: { coldAfterDays: "soon" } } } });
    const badType = cli(["gc", "--plan", "--home", home]);
    expect(badType.status).toBe(2);
    expect(badType.stderr).toContain("agentstate.json: maintenance.agents.main.coldAfterDays:");
    writeConfig(home, { maintenance: { pruneAfterDay: 3 } });
    const badKey = cli(["gc", "--home", home, "--json"]);
    expect(badKey.status).toBe(2);
    const error = JSON.parse(badKey.stderr).error;
    expect(error.code).toBe("E_INVALID_ARGUMENT");
    expect(error.details.path).toBe("maintenance.pruneAfterDay");
    expect(error.message).toContain("unknown key");
  });

  it("refuses a budget it cannot read, exit 2", () => {
    const home = seeded();
    const result = cli(["gc", "--plan", "--home", home, "--budget", "lots"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("--budget");
  });

  /** Twelve big sessions of one key, each reset into the next, idle 100 to 89 days. */
  function bigHome(pinned = false): string {
    const state = openStateHome({ home: tempDir() });
    const agent = state.agent("main");
    for (let i = 0; i < 12; i++) startSession(agent, "agent:main:k", `big-${i}`, 20, 8_000);
    if (pinned) agent.sessions.patch("agent:main:k", (e) => ({ ...e, pinnedAt: Date.now() }));
    for (let i = 0; i < 12; i++) ageSession(agent, `big-${i}`, Date.now() - (100 - i) * DAY);
    state.close();
    return state.path;
  }

  it("brings a home over its budget to its high-water mark, by a walk of every file", () => {
    const home = bigHome();
    const bytes = walk(home);
    const budget = Math.floor(bytes * 0.6);
    const result = cli(["gc", "--json", "--home", home, "--budget", String(budget)]);
    expect(result.status, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout).maintenance;
    const [outcome] = report.budgetOutcomes;
    // Counted by gc with the home open: its -wal and -shm files are part of it.
    expect(outcome).toMatchObject({ agentId: null, maxDiskBytes: budget, met: true, why: null });
    expect(outcome.bytes).toBeGreaterThanOrEqual(bytes);
    expect(walk(home)).toBeLessThanOrEqual(outcome.highWaterBytes);
    // Oldest idle first: moves before prunes, and the newest session is never pruned.
    const actions = report.actions as Action[];
    expect(actions.find((a) => a.sessionId === "big-11")?.action).not.toBe("prune");
    const pruned = actions.filter((a) => a.action === "prune").map((a) => a.sessionId);
    expect(pruned).toEqual(pruned.map((_, i) => `big-${i}`));
    expect(rowsOf(home).present.size).toBe(12 - pruned.length);
  });

  it("says why a budget cannot be met when every session is protected, and changes nothing", () => {
    const home = bigHome(true);
    const before = rowsOf(home);
    const result = cli(["gc", "--json", "--home", home, "--budget", "100KB"]);
    expect(result.status, result.stderr).toBe(0);
    const [outcome] = JSON.parse(result.stdout).maintenance.budgetOutcomes;
    expect(outcome).toMatchObject({ met: false, why: expect.stringContaining("protected") });
    expect(walk(home)).toBeGreaterThan(outcome.highWaterBytes);
    expect(rowsOf(home)).toEqual(before);
    const text = cli(["gc", "--home", home, "--budget", "100KB"]);
    expect(text.stdout).toMatch(
      /Budget home: .* above the high-water mark \(the sessions left are protected/,
    );
  });
});
