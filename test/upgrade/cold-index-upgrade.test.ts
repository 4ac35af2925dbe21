// An agent database of schema 16 kept the search rows of its cold sessions itself (cold_fts); the
// upgrade moves them into the cold index file at the first writable open. Killed anywhere, or run
// by several processes at once, it ends with the same searches, exports and claims as before.
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadMigrations } from "../../src/db/schema.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { type AgentState, openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";

/** Random kills; `npm run test:trials` runs 20. */
const TRIALS = Number(process.env.AGENTSTATE_COLD_INDEX_KILL_TRIALS ?? 3);
const SESSIONS = 30;
const EVENTS = 800;
const AGENT_DIR = join("agents", "main", "agent");
const CHILD = fileURLToPath(new URL("./open-child.mjs", import.meta.url));
const QUERIES = ["zebra", "東京", "支持", "안녕", "cafe", "tokyo weather", "rare-17*"];
const tempDir = useTempDirs();

const WORDS = ["zebra", "café", "tokyo", "weather", "paper", "river", "stone", "light"];
const CJK = ["東京の天気は？", "支持的通道列表", "第三季度销售数据", "안녕하세요 세계"];

function textOf(session: number, i: number): string {
  const words = Array.from(
    { length: 6 },
    (_, k) => WORDS[(session * 7 + i * 3 + k) % WORDS.length],
  );
  const cjk = i % 5 === 0 ? ` ${CJK[(session + i) % CJK.length]}` : "";
  return `${words.join(" ")} rare-${session}-${i}${cjk}`;
}

interface Snapshot {
  hits: Record<string, string[]>;
  exports: Record<string, string>;
  claims: unknown[];
}

function snapshotOf(agent: AgentState, db: string): Snapshot {
  const hits: Record<string, string[]> = {};
  for (const query of QUERIES) {
    hits[query] = agent.search
      .search(query, { limit: 200 })
      .map((h) => `${h.sessionId}/${h.seq}/${h.eventId}/${h.score.toFixed(9)}/${h.snippet}`);
  }
  const exports: Record<string, string> = {};
  for (let s = 0; s < SESSIONS; s++) {
    exports[`s${s}`] = [...agent.transcripts.exportJsonl(`s${s}`)].join("");
  }
  const raw = openRawSqlite(db, { readonly: true });
  const claims = raw.prepare("SELECT * FROM cold_index_claims ORDER BY session_no").all();
  raw.close();
  return { hits, exports, claims };
}

/** The statement of `name` in a shipped migration's SQL (the old release's own text). */
function statementOf(sql: string, start: string, end: RegExp): string {
  const from = sql.indexOf(start);
  expect(from).toBeGreaterThanOrEqual(0);
  const rest = sql.slice(from);
  const stop = end.exec(rest);
  return rest.slice(0, (stop?.index ?? rest.length) + (stop?.[0].length ?? 0));
}

/**
 * Turns an agent database of today into what schema 16 wrote for the same rows: the claimed rows
 * of the cold index back in cold_fts (as migration 0013 declared it), the old trigger and view back,
 * no claims table, version 16, and no cold index file.
 */
function downgradeTo16(home: string): void {
  const db = join(home, AGENT_DIR, "agent.sqlite");
  const coldIndex = join(home, AGENT_DIR, "cold", "index.sqlite");
  const migrations = loadMigrations("agent");
  const m13 = migrations[12]?.sql as string;
  const m16 = migrations[15]?.sql as string;
  const raw = openRawSqlite(db);
  raw.exec(`ATTACH '${coldIndex}' AS cold`);
  raw.exec("BEGIN");
  raw.exec(statementOf(m13, "CREATE VIRTUAL TABLE cold_fts", /\);/));
  raw.exec(`INSERT INTO cold_fts (rowid, text) SELECT c.rowid, c.text FROM cold.cold_fts c
    JOIN cold_index_claims k ON k.session_no = c.rowid / 4294967296
      AND c.rowid % 4294967296 <= k.through_seq ORDER BY c.rowid`);
  raw.exec(statementOf(m13, "CREATE TRIGGER sessions_cold_unindex", /\nEND;/));
  raw.exec(statementOf(m16, "CREATE VIEW agentstate_cold_search_v1", /;\s*$/));
  raw.exec("DROP TABLE cold_index_claims");
  raw.exec("DELETE FROM schema_migrations WHERE version = 17");
  raw.exec("PRAGMA user_version = 16");
  raw.exec("COMMIT");
  raw.exec("DETACH cold");
  raw.close();
  rmSync(coldIndex);
}

let template: string;
let before: Snapshot;

beforeAll(() => {
  requireBuild();
  template = mkdtempSync(join(tmpdir(), "agentstate-cold16-"));
  const state = openStateHome({ home: template });
  const agent = state.agent("main");
  for (let s = 0; s < SESSIONS; s++) {
    const events = Array.from({ length: EVENTS }, (_, i) => ({
      type: "message",
      message: {
        role: s % 2 ? "user" : "assistant",
        content: [{ type: "text", text: textOf(s, i) }],
      },
    }));
    agent.transcripts.appendMany(`s${s}`, events);
  }
  for (let s = 0; s < SESSIONS - 6; s++) agent.cold.move(`s${s}`);
  // Restored since (its rows stay cold-indexed), then appended to, then moved again.
  agent.transcripts.append("s0", {
    type: "message",
    message: { role: "user", content: "zebra back" },
  });
  agent.transcripts.append("s1", {
    type: "message",
    message: { role: "user", content: "zebra back" },
  });
  agent.cold.move("s1");
  agent.lifecycle.delete("s2");
  agent.cold.purgeIndex();
  before = snapshotOf(agent, join(template, AGENT_DIR, "agent.sqlite"));
  state.close();
  expect(before.hits.zebra?.length).toBe(200);
  expect(before.hits.東京?.length).toBeGreaterThan(100);
  downgradeTo16(template);
  const claimed = (before.claims as { rows: number }[]).reduce((sum, c) => sum + c.rows, 0);
  expect(claimed).toBeGreaterThan(10_000);
  expect(legacyRows(template)).toBe(claimed);
}, 240_000);

/** The rows the agent database still holds itself, or null once they moved. */
function legacyRows(home: string): number | null {
  const raw = openRawSqlite(join(home, AGENT_DIR, "agent.sqlite"), { readonly: true });
  try {
    const table = raw.prepare("SELECT 1 FROM sqlite_master WHERE name = 'cold_fts'").get();
    return table === undefined
      ? null
      : (raw.prepare("SELECT count(*) FROM cold_fts").pluck().get() as number);
  } finally {
    raw.close();
  }
}
afterAll(() => rmSync(template, { recursive: true, force: true }));

function assertUpgraded(home: string, where: string): void {
  const db = join(home, AGENT_DIR, "agent.sqlite");
  const state = openStateHome({ home });
  const after = snapshotOf(state.agent("main"), db);
  state.close();
  expect(after.hits, where).toEqual(before.hits);
  expect(after.exports, where).toEqual(before.exports);
  expect(after.claims, where).toEqual(before.claims);
  const raw = openRawSqlite(db, { readonly: true });
  expect(
    raw.prepare("SELECT name FROM sqlite_master WHERE name = 'cold_fts'").all(),
    where,
  ).toEqual([]);
  raw.close();
  const cold = openRawSqlite(join(home, AGENT_DIR, "cold", "index.sqlite"));
  cold.exec("INSERT INTO cold_fts (cold_fts) VALUES ('integrity-check')");
  cold.close();
}

function openChild(home: string, killAfterMs: number | null): Promise<{ killed: boolean }> {
  const child: ChildProcess = spawn(process.execPath, [CHILD, home, "main"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  let killed = false;
  const timer =
    killAfterMs === null
      ? undefined
      : setTimeout(() => (killed = child.kill("SIGKILL")), killAfterMs);
  return new Promise((resolve) =>
    child.on("close", () => {
      clearTimeout(timer);
      resolve({ killed });
    }),
  );
}

describe("an agent database of schema 16 with cold sessions", () => {
  it("moves its cold search rows to the cold index file at the first open, with progress", () => {
    const home = tempDir();
    cpSync(template, home, { recursive: true });
    expect(existsSync(join(home, AGENT_DIR, "cold", "index.sqlite"))).toBe(false);
    const steps: string[] = [];
    const state = openStateHome({ home, onUpgradeProgress: (p) => steps.push(p.step) });
    state.agent("main");
    state.close();
    expect(steps).toContain("cold search index");
    assertUpgraded(home, "writable open");
  });

  it("answers a read-only home the same (its first open upgrades it)", () => {
    const home = tempDir();
    cpSync(template, home, { recursive: true });
    const reader = openStateHome({ home, readonly: true });
    const hits = reader.agent("main").search.search("zebra", { limit: 200 });
    expect(hits.map((h) => `${h.sessionId}/${h.seq}`)).toEqual(
      before.hits.zebra?.map((h) => h.split("/").slice(0, 2).join("/")),
    );
    reader.close();
    assertUpgraded(home, "read-only open");
  });

  it("killed with SIGKILL anywhere in the move, or opened by three processes at once, ends the same", async () => {
    const timing = tempDir();
    cpSync(template, timing, { recursive: true });
    const started = Date.now();
    await openChild(timing, null);
    const runMs = Date.now() - started;
    let stoppedInside = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const home = tempDir();
      cpSync(template, home, { recursive: true });
      const { killed } = await openChild(home, Math.floor(Math.random() * runMs));
      if (killed && legacyRows(home) !== null && existsSync(join(home, AGENT_DIR, "cold"))) {
        stoppedInside++;
      }
      assertUpgraded(home, `trial ${trial}`);
    }
    // Kills land inside the move, not only before or after it.
    if (TRIALS >= 10) expect(stoppedInside).toBeGreaterThan(0);
    const home = tempDir();
    cpSync(template, home, { recursive: true });
    await Promise.all([openChild(home, null), openChild(home, null), openChild(home, null)]);
    assertUpgraded(home, "three at once");
  }, 240_000);
});
