// agentstate_cold_search_v2: the index rows of cold sessions (and of sessions restored since), in
// the agent's cold index file, read by plain SQL beside agentstate_search_v1, whose rows they
// complete.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";

const tempDir = useTempDirs();
const user = (text: string) => ({
  type: "message",
  message: { role: "user", content: [{ type: "text", text }] },
});
const COLUMNS = "session_id, seq, event_id, event_type, created_at, text";

/** The rows of a view matching `word`, by plain SQL on the file, in a stable order. */
function rowsOf(dbPath: string, view: string, word: string): Record<string, unknown>[] {
  const raw = openRawSqlite(dbPath, { readonly: true });
  try {
    return raw
      .prepare(`SELECT ${COLUMNS} FROM ${view} WHERE text MATCH ? ORDER BY session_id, seq`)
      .all(word) as Record<string, unknown>[];
  } finally {
    raw.close();
  }
}

describe("agentstate_cold_search_v2", () => {
  it("holds the index rows of cold and restored sessions in the cold index file: with search_v1, every row", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    const agent = state.agent("main");
    for (const session of ["a", "b"]) {
      for (let i = 0; i < 8; i++) agent.transcripts.append(session, user(`zebras ${session} ${i}`));
    }
    agent.transcripts.index.indexPending();
    const dbPath = join(home, "agents", "main", "agent", "agent.sqlite");
    const coldPath = join(home, "agents", "main", "agent", "cold", "index.sqlite");
    const before = rowsOf(dbPath, "agentstate_search_v1", "zebras");
    expect(before).toHaveLength(16);
    expect(existsSync(coldPath)).toBe(false);
    const ofA = before.filter((r) => r.session_id === "a");
    // A cold event has no row to read there: its seq and text are in the view.
    const coldOfA = ofA.map((r) => ({ ...r, event_id: null, event_type: null, created_at: null }));

    agent.cold.move("a");
    expect(rowsOf(dbPath, "agentstate_search_v1", "zebras")).toEqual(
      before.filter((r) => r.session_id === "b"),
    );
    expect(rowsOf(coldPath, "agentstate_cold_search_v2", "zebras")).toEqual(coldOfA);

    agent.transcripts.append("a", user("warm again"));
    expect(agent.cold.isCold("a")).toBe(false);
    // Restored: the same rows stay (the file cannot read the agent database's hot rows).
    expect(rowsOf(coldPath, "agentstate_cold_search_v2", "zebras")).toEqual(coldOfA);
    expect(rowsOf(dbPath, "agentstate_search_v1", "zebras")).toEqual(
      before.filter((r) => r.session_id === "b"),
    );
    state.close();

    // The agent database has no cold view (schema 17 withdrew v1): a view cannot read another file.
    const agentDb = openRawSqlite(dbPath, { readonly: true });
    const views = agentDb.prepare("SELECT name FROM sqlite_master WHERE type = 'view'").pluck();
    expect((views.all() as string[]).filter((v) => v.startsWith("agentstate_cold"))).toEqual([]);
    agentDb.close();

    const raw = openRawSqlite(coldPath, { readonly: true });
    try {
      const one = (sql: string) => raw.prepare(sql).pluck().all();
      expect(
        one("SELECT count(*) FROM agentstate_cold_search_v2 WHERE text MATCH 'zebras'"),
      ).toEqual([8]);
      expect(
        one(`SELECT seq FROM agentstate_cold_search_v2 WHERE text MATCH 'zebras'
             ORDER BY score, seq LIMIT 3`),
      ).toHaveLength(3);
      expect(
        one(
          "SELECT typeof(score) FROM agentstate_cold_search_v2 WHERE text MATCH 'zebras' LIMIT 1",
        ),
      ).toEqual(["real"]);
    } finally {
      raw.close();
    }
  });

  it("answers the stock sqlite3 shell: both views of a word, hot and cold, as the library finds them", () => {
    const shell = "/usr/bin/sqlite3";
    expect(existsSync(shell), `${shell} is missing: run node scripts/ensure-sqlite3.mjs`).toBe(
      true,
    );
    const home = tempDir();
    const state = openStateHome({ home });
    const agent = state.agent("main");
    for (const session of ["a", "b", "c"]) {
      for (let i = 0; i < 5; i++)
        agent.transcripts.append(session, user(`kubernetes ${session} ${i}`));
    }
    agent.cold.move("a");
    agent.cold.move("b");
    agent.transcripts.append("b", user("kubernetes again"));
    const found = agent.search
      .search("kubernetes", { limit: 100 })
      .map((h) => `${h.sessionId}|${h.seq}`)
      .sort();
    expect(found).toHaveLength(16);
    state.close();
    const dbPath = join(home, "agents", "main", "agent", "agent.sqlite");
    // The example of docs/read-views.md, as written there.
    const sql = `ATTACH '${join(home, "agents", "main", "agent", "cold", "index.sqlite")}' AS cold;
      SELECT session_id || '|' || seq FROM agentstate_search_v1 WHERE text MATCH 'kubernetes'
      UNION ALL SELECT session_id || '|' || seq FROM agentstate_unindexed_events_v1
        WHERE event_json LIKE '%kubernetes%'
      UNION ALL SELECT session_id || '|' || seq FROM cold.agentstate_cold_search_v2
        WHERE text MATCH 'kubernetes'`;
    const result = spawnSync(shell, ["-bail", dbPath, sql], { encoding: "utf8" });
    expect(result.stderr).toBe("");
    expect(result.stdout.trim().split("\n").sort()).toEqual(found);
  });
});
