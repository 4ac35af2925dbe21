import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadMigrations } from "../../src/db/schema.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { CATCH_UP_BATCH } from "../../src/stores/agent/transcript-index.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { contributionOf, sumByDay } from "../../src/test-support/usage-oracle.js";

const tempDir = useTempDirs();
const DAY = 86_400_000;
const START = Date.UTC(2026, 0, 1);

function eventAt(i: number): { json: Record<string, unknown>; time: number } {
  const time = START + (i % 40) * (DAY / 4);
  const assistant = i % 3 !== 0;
  const usage =
    i % 7 === 0
      ? { input: i, output: 2, totalTokens: i + 2 }
      : { input: i, output: 5, cacheRead: 100, cacheWrite: 1, cost: { total: (i % 10) / 100 } };
  const message = assistant
    ? { role: "assistant", provider: "p", model: `m${i % 2}`, usage, content: [] }
    : { role: "user", content: [] };
  return {
    json: { type: "message", id: `e${i}`, timestamp: new Date(time).toISOString(), message },
    time,
  };
}

// An empty schema-6 layout is finished by dropping its old tables, as the upgrade's last step.
const FINISH_EMPTY_LAYOUT = `DROP TABLE transcript_events_v6; DROP TABLE transcript_identities_v6;
  DROP TABLE transcript_blob_refs_v6;`;

/**
 * A home whose agent database was written by the release before the rollups: the migrations up to
 * theirs applied and `count` events written with it, as rows (today's stores need today's schema).
 */
function homeBeforeRollups(count: number): { home: string; dbPath: string } {
  const home = tempDir();
  openStateHome({ home }).agent("main");
  const dbPath = join(home, "agents", "main", "agent", "agent.sqlite");
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${dbPath}${suffix}`, { force: true });
  const migrations = loadMigrations("agent");
  const before = migrations.findIndex((m) => m.name === "usage_rollups");
  expect(before).toBeGreaterThan(0);
  const raw = openRawSqlite(dbPath);
  raw.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
    sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const record = raw.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?, 0)");
  for (const m of migrations.slice(0, before)) {
    raw.exec(m.sql);
    record.run(m.version, m.name, m.sha256);
  }
  raw.exec(FINISH_EMPTY_LAYOUT);
  raw.exec(`PRAGMA user_version = ${before}`);
  raw.exec("INSERT INTO sessions (session_id, created_at, updated_at) VALUES ('s', 0, 0)");
  const insert = raw.prepare(`INSERT INTO transcript_events
    (session_no, seq, event_id, event_type, parent_id, created_at, event_json)
    VALUES (1, ?, ?, 'message', NULL, ?, ?)`);
  raw.exec("BEGIN");
  for (let i = 0; i < count; i++) {
    const { json, time } = eventAt(i);
    insert.run(i + 1, json.id, time, JSON.stringify(json));
  }
  // Searchable already: only the rollups are behind.
  raw.exec(`UPDATE search_index_state SET indexed_through = ${count}; COMMIT`);
  raw.close();
  return { home, dbPath };
}

function oracle(count: number) {
  return sumByDay(
    Array.from({ length: count }, (_, i) => {
      const { json, time } = eventAt(i);
      return contributionOf(json, time);
    }),
  );
}

describe("an agent database from the release before usage rollups", () => {
  it("is rolled up at open in bounded batches when its history is long", () => {
    const count = 5 * CATCH_UP_BATCH + 2500;
    const { home, dbPath } = homeBeforeRollups(count);
    const progress: number[] = [];
    const state = openStateHome({ home, onUpgradeProgress: (p) => progress.push(p.done) });
    state.agent("main");
    const raw = openRawSqlite(dbPath, { readonly: true });
    const mark = raw.prepare("SELECT rolled_through AS m FROM usage_rollup_state").get() as {
      m: number;
    };
    raw.close();
    expect(mark.m).toBe(count);
    expect(progress.length).toBeGreaterThan(2);
    const steps = progress.map((done, i) => done - (progress[i - 1] ?? 0));
    expect(Math.max(...steps)).toBeLessThanOrEqual(2000);
    expect(sumByDay(state.agent("main").usage.byDay())).toEqual(oracle(count));
    state.close();
  });

  it("answers in full from a read-only home before any writer rolled a short history up", () => {
    const { home } = homeBeforeRollups(300);
    const reader = openStateHome({ home, readonly: true });
    expect(sumByDay(reader.agent("main").usage.byDay())).toEqual(oracle(300));
    reader.close();
    const writer = openStateHome({ home });
    writer.agent("main").transcripts.index.indexPending();
    expect(sumByDay(writer.agent("main").usage.byDay())).toEqual(oracle(300));
    writer.close();
  });
});
