// `gc --vacuum` on homes written before incremental auto-vacuum: switched, shrunk, nothing lost,
// also when the process is killed in the middle of a rewrite.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const MiB = 1024 * 1024;
const globalPath = (home: string) => join(home, "state", "state.sqlite");
const agentPath = (home: string) => join(home, "agents", "main", "agent", "agent.sqlite");
const coldIndexPath = (home: string) =>
  join(home, "agents", "main", "agent", "cold", "index.sqlite");

/** A home as an older release left it: `files` VFS files of 64 KiB, auto-vacuum off. */
function oldHome(files: number): string {
  const home = tempDir();
  const state = openStateHome({ home });
  const agent = state.agent("main");
  const fs = agent.vfs.namespace("scratch");
  fs.mkdir("/f");
  for (let i = 0; i < files; i++) fs.writeFile(`/f/${i}.bin`, randomBytes(64 * 1024));
  for (let i = 0; i < 50; i++) agent.kv.set("notes", `k${i}`, { i, text: `note ${i}` });
  state.kv.set("settings", "theme", "dark");
  state.close();
  for (const path of [globalPath(home), agentPath(home)]) {
    const raw = openRawSqlite(path);
    raw.exec("PRAGMA auto_vacuum = NONE");
    raw.exec("VACUUM");
    raw.close();
  }
  return home;
}

function removeFiles(home: string, from: number, to: number): void {
  const state = openStateHome({ home, create: false });
  const fs = state.agent("main").vfs.namespace("scratch");
  for (let i = from; i < to; i++) fs.rm(`/f/${i}.bin`);
  state.close();
}

function cell(value: unknown): string {
  return value instanceof Uint8Array ? Buffer.from(value).toString("hex") : JSON.stringify(value);
}

/**
 * What `gc` itself refreshes on purpose: each agent's recorded size and last-seen time, and the
 * result and time of the quick_check it runs on each agent.
 */
const REFRESHED_BY_GC: Record<string, readonly string[]> = {
  agent_databases: ["size_bytes", "last_seen_at", "quick_check", "quick_checked_at"],
};

/**
 * Every row of every table, rowid included, hashed here from plain SQL: the oracle for "nothing
 * changed". Also the auto-vacuum mode as SQLite reads it from the file.
 */
function inspect(path: string): {
  autoVacuum: number;
  rows: number;
  sha256: string;
  check: unknown;
} {
  const raw = openRawSqlite(path, { readonly: true });
  try {
    const tables = raw
      .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
      .all() as { name: string; sql: string | null }[];
    const hash = createHash("sha256");
    let rows = 0;
    for (const { name, sql } of tables) {
      const withRowid = !/WITHOUT\s+ROWID/i.test(sql ?? "") && !name.startsWith("sqlite_");
      const select = `SELECT ${withRowid ? "rowid AS _rowid_, " : ""}* FROM "${name}"`;
      const lines = (raw.prepare(select).all() as Record<string, unknown>[])
        .map((row) =>
          Object.entries(row)
            .filter(([column]) => !REFRESHED_BY_GC[name]?.includes(column))
            .map(([, value]) => cell(value))
            .join("|"),
        )
        .sort();
      hash.update(`${name}\n${lines.join("\n")}\n`);
      rows += lines.length;
    }
    return {
      autoVacuum: raw.pragma("auto_vacuum", { simple: true }) as number,
      rows,
      sha256: hash.digest("hex"),
      check: raw.pragma("integrity_check", { simple: true }),
    };
  } finally {
    raw.close();
  }
}

interface StatusDb {
  agentId: string | null;
  autoVacuum: string;
  freeBytes: number;
}

describe("agentstate gc --vacuum", () => {
  it("switches older databases to incremental auto-vacuum and shrinks them, every row identical", () => {
    const home = oldHome(320);
    removeFiles(home, 0, 280);
    const before = [globalPath(home), agentPath(home)].map(inspect);
    expect(before.map((b) => b.autoVacuum)).toEqual([0, 0]);
    const bytesBefore = statSync(agentPath(home)).size;
    expect(bytesBefore).toBeGreaterThan(20 * MiB);

    const status = cli(["status", "--home", home, "--json"]);
    expect(status.status, status.stderr).toBe(0);
    const dbs = JSON.parse(status.stdout).databases as StatusDb[];
    expect(dbs.map((d) => d.autoVacuum)).toEqual(["none", "none"]);
    expect(dbs.find((d) => d.agentId === "main")?.freeBytes).toBeGreaterThan(15 * MiB);
    expect(cli(["status", "--home", home]).stdout).toMatch(/gc --vacuum/);

    const result = cli(["gc", "--vacuum", "--home", home, "--json"]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      /^vacuuming global .*\n(.*\n)*vacuumed main \(none -> incremental/m,
    );
    const report = JSON.parse(result.stdout);
    const main = report.databases.find((d: { agentId: string | null }) => d.agentId === "main");
    expect(main.vacuum).toMatchObject({ autoVacuumBefore: "none", autoVacuum: "incremental" });

    const after = [globalPath(home), agentPath(home)].map(inspect);
    expect(after.map((a) => a.autoVacuum)).toEqual([2, 2]);
    expect(after.map((a) => a.check)).toEqual(["ok", "ok"]);
    expect(after.map(({ rows, sha256 }) => ({ rows, sha256 }))).toEqual(
      before.map(({ rows, sha256 }) => ({ rows, sha256 })),
    );
    // 40 files of 64 KiB are left: about 2.5 MiB of live data.
    expect(statSync(agentPath(home)).size).toBeLessThan(5 * MiB);

    const again = JSON.parse(cli(["status", "--home", home, "--json"]).stdout);
    expect(again.databases.map((d: StatusDb) => d.autoVacuum)).toEqual([
      "incremental",
      "incremental",
    ]);
  }, 120_000);

  it("gives an incremental database's free pages back without rewriting it", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    const fs = state.agent("main").vfs.namespace("scratch");
    fs.mkdir("/f");
    for (let i = 0; i < 80; i++) fs.writeFile(`/f/${i}.bin`, randomBytes(64 * 1024));
    state.close();
    // Deleted through SQL on a process without the background thread: the pages stay free.
    const raw = openRawSqlite(agentPath(home));
    raw.exec("PRAGMA foreign_keys = ON");
    raw.exec("DELETE FROM vfs_entries WHERE path LIKE '/f/%'");
    expect(raw.pragma("freelist_count", { simple: true })).toBeGreaterThan(1000);
    raw.close();
    const before = inspect(agentPath(home));
    const result = cli(["gc", "--vacuum", "--home", home, "--json"]);
    expect(result.status, result.stderr).toBe(0);
    const main = JSON.parse(result.stdout).databases.find(
      (d: { agentId: string | null }) => d.agentId === "main",
    );
    expect(main.vacuum).toMatchObject({ rewritten: false, autoVacuum: "incremental" });
    const after = inspect(agentPath(home));
    expect(after).toEqual(before);
    expect(statSync(agentPath(home)).size).toBeLessThan(2 * MiB);
    expect(result.stdout).not.toContain('"error"');
  }, 60_000);

  it("killed -9 in the middle of the rewrite: the old file, whole; the next run finishes it", async () => {
    const home = oldHome(800); // 50 MiB: the rewrite runs long enough to be caught in the middle
    const before = inspect(agentPath(home));
    const child = spawn(process.execPath, [CLI, "gc", "--vacuum", "--home", home], {
      env: { ...process.env, AGENTSTATE_HOME: "" },
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<string | null>((resolve) => child.on("exit", (_, s) => resolve(s)));
    const walBytes = () => statSync(`${agentPath(home)}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    const deadline = Date.now() + 30_000;
    // The rewrite spills into the WAL long before it commits: 8 MiB there is the middle of it.
    while (!(stderr.includes("vacuuming main") && walBytes() > 8 * MiB) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(stderr).not.toContain("vacuumed main");
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");

    const killed = inspect(agentPath(home));
    expect(killed.check).toBe("ok");
    expect(killed.autoVacuum).toBe(0);
    expect({ rows: killed.rows, sha256: killed.sha256 }).toEqual({
      rows: before.rows,
      sha256: before.sha256,
    });

    const rerun = cli(["gc", "--vacuum", "--home", home]);
    expect(rerun.status, rerun.stderr).toBe(0);
    const done = inspect(agentPath(home));
    expect(done.autoVacuum).toBe(2);
    expect(done.check).toBe("ok");
    expect({ rows: done.rows, sha256: done.sha256 }).toEqual({
      rows: before.rows,
      sha256: before.sha256,
    });
  }, 180_000);

  it("packs the full-text index of sessions moved cold: its space is given back too, every hit kept", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    const agent = state.agent("main");
    const words = ["kubernetes", "deploy", "rollback", "latency", "quota", "gateway", "cron"];
    const sessions = Array.from({ length: 6 }, (_, i) => `s${i}`);
    // s0, the one left hot, is written last: idle sessions are the older ones.
    for (const [i, sessionId] of [...sessions.slice(1), "s0"].entries()) {
      for (let batch = 0; batch < 6; batch++) {
        const events = Array.from({ length: 100 }, (_, n) => ({
          type: "message",
          message: {
            role: "user",
            content: [
              { type: "text", text: `${words[(i + n) % 7]} note ${i}-${batch}-${n} `.repeat(20) },
            ],
          },
        }));
        agent.transcripts.appendMany(sessionId, events);
      }
    }
    agent.transcripts.index.indexPending();
    for (const sessionId of sessions.slice(1)) agent.cold.move(sessionId);
    state.close();

    /** Bytes of an FTS5 table's segments, and the (table, rowid) of every hit of each word. */
    const measure = () => {
      const raw = openRawSqlite(agentPath(home), { readonly: true });
      const cold = openRawSqlite(coldIndexPath(home), { readonly: true });
      try {
        const bytes = raw.prepare("SELECT sum(length(block)) FROM transcript_fts_data").pluck();
        const hot = raw
          .prepare(
            `SELECT 'hot ' || rowid FROM transcript_fts WHERE transcript_fts MATCH ?
               AND rowid IN (SELECT id FROM transcript_events)`,
          )
          .pluck();
        const coldHits = cold
          .prepare("SELECT 'cold ' || rowid FROM cold_fts WHERE cold_fts MATCH ?")
          .pluck();
        const hits = words.map((word) =>
          [...(hot.all(word) as string[]), ...(coldHits.all(word) as string[])].sort(),
        );
        return { bytes: bytes.get() as number, hits, file: statSync(agentPath(home)).size };
      } finally {
        raw.close();
        cold.close();
      }
    };
    const before = measure();
    // The floor: the index rows of the hot events in a new FTS5 table, its segments written once
    // (the rows the moves left behind, matching no event, are gc's to drop).
    const copy = join(tempDir(), "copy.sqlite");
    const raw = openRawSqlite(agentPath(home));
    raw.exec(`VACUUM INTO '${copy}'`);
    raw.close();
    const fresh = openRawSqlite(copy);
    fresh.exec(`CREATE VIRTUAL TABLE floor USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
      INSERT INTO floor (rowid, text) SELECT rowid, text FROM transcript_fts
        WHERE rowid IN (SELECT id FROM transcript_events);`);
    const floor = fresh
      .prepare("SELECT sum(length(block)) FROM floor_data")
      .pluck()
      .get() as number;
    fresh.close();
    expect(before.bytes).toBeGreaterThan(3 * floor);

    const result = cli(["gc", "--vacuum", "--home", home, "--json"]);
    expect(result.status, result.stderr).toBe(0);
    const after = measure();
    expect(after.hits).toEqual(before.hits);
    expect(after.hits.flat().length).toBeGreaterThan(1000);
    expect(after.bytes).toBeLessThanOrEqual(1.25 * floor);
    expect(after.file).toBeLessThan(before.file);
    expect(JSON.parse(result.stdout).databases[1].coldIndexRows).toBe(5 * 601);
    const check = openRawSqlite(agentPath(home));
    expect(
      check
        .prepare(`SELECT (SELECT count(*) FROM transcript_fts_stale)
          + (SELECT count(*) FROM transcript_fts WHERE rowid NOT IN (SELECT id FROM transcript_events))`)
        .pluck()
        .get(),
    ).toBe(0);
    check.exec("INSERT INTO transcript_fts (transcript_fts) VALUES ('integrity-check')");
    check.close();
    const coldCheck = openRawSqlite(coldIndexPath(home));
    coldCheck.exec("INSERT INTO cold_fts (cold_fts) VALUES ('integrity-check')");
    coldCheck.close();
  }, 60_000);
});
