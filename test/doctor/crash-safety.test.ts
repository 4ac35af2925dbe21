import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";
import { requireBuild } from "../support/built.js";

const RUNNER = new URL("../fixtures/doctor-runner.mjs", import.meta.url).pathname;
let root: string;

beforeAll(() => {
  requireBuild();
  root = mkdtempSync(join(tmpdir(), "agentstate-crash-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function runToEnd(home: string): { status: string } {
  const result = spawnSync(process.execPath, [RUNNER, home], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`doctor failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as { status: string };
}

function runAndKill(home: string, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUNNER, home], { stdio: "ignore" });
    const timer = setTimeout(() => child.kill("SIGKILL"), afterMs);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Every row that a clean import determines, per agent, in a comparable form. */
function snapshotRows(home: string): Record<string, unknown> {
  const state = openStateHome({ home, create: false });
  const rows: Record<string, unknown> = {};
  for (const { agentId } of state.listAgents()) {
    const agent = state.agent(agentId, { create: false });
    // What is still waiting for the search index is indexed first: the count below then says
    // whether any event was indexed twice, whichever run left it pending.
    agent.transcripts.index.indexPending();
    const db = agent.db;
    rows[agentId] = {
      events: db
        .prepare(
          "SELECT session_id, seq, event_json, created_at FROM agentstate_events_v1 ORDER BY session_id, seq",
        )
        .all(),
      identities: db
        .prepare(
          "SELECT session_id, event_id, seq, parent_id FROM agentstate_events_v1 ORDER BY session_id, seq",
        )
        .all(),
      entries: db
        .prepare(
          "SELECT session_key, entry_json, updated_at FROM session_entries ORDER BY session_key",
        )
        .all(),
      sessions: db
        .prepare(
          "SELECT session_id, session_key, ended_at, reset_reason, reset_message, predecessor_id, event_count, leaf_event_id FROM agentstate_sessions_v1 ORDER BY session_id",
        )
        .all(),
      search: db.prepare("SELECT count(*) AS n FROM transcript_fts").get(),
    };
  }
  state.close();
  return rows;
}

describe("doctor --fix killed with SIGKILL at 20 random points", () => {
  it("finishes on rerun with exactly the rows of a clean import, removing no source early", async () => {
    const pristine = join(root, "pristine");
    generateLegacyHome(pristine, {
      agents: 2,
      sessions: 30,
      events: 150,
      bigTranscriptMb: 6,
      deleted: 3,
      daycare: true,
    });
    const clean = join(root, "clean");
    cpSync(pristine, clean, { recursive: true });
    expect(runToEnd(clean).status).toBe("succeeded");
    const expected = snapshotRows(clean);

    const crashed = join(root, "crashed");
    cpSync(pristine, crashed, { recursive: true });
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let attempt = 0; attempt < 20; attempt++) {
      await runAndKill(crashed, 120 + Math.floor(random() * 700));
      if (!existsSync(join(crashed, "state", "state.sqlite"))) continue;
      // A source that is gone must already have all its rows: compare with the clean import.
      const state = openStateHome({ home: crashed, create: false });
      const removed = state.db
        .prepare<{ source_path: string; source_record_count: number }>(
          "SELECT source_path, source_record_count FROM migration_sources WHERE removed_source = 1",
        )
        .all();
      state.close();
      for (const source of removed)
        expect(existsSync(join(crashed, source.source_path)), source.source_path).toBe(false);
    }
    const final = runToEnd(crashed);
    expect(["succeeded", "nothing-to-do"]).toContain(final.status);
    expect(snapshotRows(crashed)).toEqual(expected);
  }, 300_000);
});
