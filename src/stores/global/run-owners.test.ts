import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { processStartTime } from "../../db/process-owner.js";
import { loadMigrations } from "../../db/schema.js";
import { openRawSqlite } from "../../db/test-support/raw-sqlite.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { BackupRunStore } from "./backup-run-store.js";
import { MigrationLedgerStore } from "./migration-ledger-store.js";

const tempDir = useTempDirs();

/** A global database as the release before run owners left it: migrations 1 to 5 only. */
function databaseAtVersion5(path: string): void {
  const raw = openRawSqlite(path);
  raw.pragma("foreign_keys = ON");
  raw.exec(`CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL
  ) STRICT`);
  for (const migration of loadMigrations("global").slice(0, 5)) {
    raw.exec(migration.sql);
    raw
      .prepare("INSERT INTO schema_migrations VALUES (?, ?, ?, 0)")
      .run(migration.version, migration.name, migration.sha256);
  }
  raw.pragma("user_version = 5");
  raw.exec(`
    INSERT INTO backup_runs VALUES ('b1', 10, '/x/one.tar.gz', 'succeeded', '{"databases":[]}');
    INSERT INTO backup_runs VALUES ('b2', 20, '/x/two.tar.gz', 'running', '{}');
    INSERT INTO migration_runs VALUES ('m1', 5, 6, 'partial', '{}');
    INSERT INTO migration_sources VALUES ('k1', 'transcript', 'a.jsonl', 'transcript_events',
      'h', 1, 1, 'm1', 'warning', 6, 0, '{}');
    INSERT INTO migration_quarantine VALUES ('a.jsonl', 1, 'h', 'transcript', 'h', 'bad', x'00', 'm1', 6);
  `);
  raw.close();
}

describe("run owners (schema 6)", () => {
  it("upgrading keeps every backup and migration row and their foreign keys", () => {
    const path = join(tempDir(), "state.sqlite");
    databaseAtVersion5(path);
    const db = openDatabase({ path, role: "global" });
    const backups = new BackupRunStore(db);
    expect(backups.listAll().map((run) => [run.id, run.status, run.owner])).toEqual([
      ["b2", "running", null],
      ["b1", "succeeded", null],
    ]);
    expect(backups.finish("b2", "interrupted", { interrupted: "gone" })).toBe(true);
    expect(backups.get("b2")?.status).toBe("interrupted");
    const ledger = new MigrationLedgerStore(db);
    expect(ledger.getRun("m1")).toMatchObject({ status: "partial", owner: null });
    expect(ledger.sourcesOfRun("m1").map((source) => source.sourceKey)).toEqual(["k1"]);
    expect(db.prepare("SELECT count(*) AS n FROM migration_quarantine").get()).toEqual({ n: 1 });
    expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([]);
    db.close();
  });

  it("a new run records this process and its start time; running ones are listed oldest first", () => {
    const db = openDatabase({ path: join(tempDir(), "state.sqlite"), role: "global" });
    const backups = new BackupRunStore(db);
    const ledger = new MigrationLedgerStore(db);
    const me = { pid: process.pid, started: processStartTime(process.pid) };
    backups.start("late", 2, "/b/2");
    backups.start("early", 1, "/b/1");
    backups.start("done", 0, "/b/0");
    backups.finish("done", "succeeded", {});
    expect(backups.running().map((run) => [run.id, run.owner])).toEqual([
      ["early", me],
      ["late", me],
    ]);
    ledger.startRun("m");
    expect(ledger.runningRuns().map((run) => [run.id, run.owner])).toEqual([["m", me]]);
    ledger.finishRun("m", "interrupted", {});
    expect(ledger.runningRuns()).toEqual([]);
    db.close();
  });
});
