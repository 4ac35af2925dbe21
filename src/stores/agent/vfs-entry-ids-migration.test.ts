import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONNECTION_PRAGMAS, Database, openDatabase } from "../../db/database.js";
import { chooseDriver, driverFactory } from "../../db/driver-choice.js";
import { loadMigrations } from "../../db/schema.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { VFS_CHUNK_BYTES } from "../../vfs/chunks.js";
import { VfsStore } from "./vfs-store.js";

const tempDir = useTempDirs();
const BEFORE = 4; // the last agent schema before vfs_entries was rebuilt (0005_vfs_entry_ids)

/** An agent database as an agentstate of schema version 4 left it, open without migrating. */
function openOldDatabase(path: string): Database {
  const driver = driverFactory(chooseDriver())(path, {});
  for (const [name, value] of CONNECTION_PRAGMAS) driver.exec(`PRAGMA ${name} = ${value}`);
  driver.exec("BEGIN IMMEDIATE");
  driver.exec(`CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  ) STRICT`);
  const record = driver.prepare(
    "INSERT INTO schema_migrations (version, name, sha256, applied_at) VALUES (?, ?, ?, ?)",
  );
  for (const migration of loadMigrations("agent").slice(0, BEFORE)) {
    driver.exec(migration.sql);
    record.run(migration.version, migration.name, migration.sha256, Date.now());
  }
  driver.exec(`PRAGMA user_version = ${BEFORE}`);
  driver.exec("COMMIT");
  return new Database(driver, "agent", { from: 0, to: BEFORE, applied: [] });
}

function pattern(size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + 7) & 0xff;
  return out;
}

const ENTRIES = "SELECT * FROM vfs_entries ORDER BY id";
const CHUNKS = "SELECT * FROM vfs_chunks ORDER BY entry_id, chunk_index";

describe("agent schema 0005: vfs_entries rebuilt with ids that are never reused", () => {
  it("keeps every entry, id and chunk of a database written by the old schema", async () => {
    const path = join(tempDir(), "agent.sqlite");
    const old = openOldDatabase(path);
    const store = new VfsStore(old);
    const vfs = store.namespace();
    const big = pattern(2 * VFS_CHUNK_BYTES + 5);
    vfs.writeFile("/docs/a.txt", "alpha", { parents: true, metadata: { type: "text" } });
    vfs.writeFile("/docs/big.bin", big);
    vfs.mkdir("/empty");
    store.namespace("other").writeFile("/b", pattern(300));
    const staged = await vfs.stage([pattern(VFS_CHUNK_BYTES + 1)]);
    const entries = old.prepare(ENTRIES).all();
    const chunks = old.prepare(CHUNKS).all();
    const largestId = Math.max(...entries.map((row) => row.id as number));
    expect(old.prepare("SELECT count(*) AS n FROM vfs_chunks").get()).toEqual({ n: 3 + 2 });
    old.close();

    const db = openDatabase({ path, role: "agent" });
    const later = loadMigrations("agent").slice(BEFORE);
    expect(later[0]).toMatchObject({ version: 5, name: "vfs_entry_ids" });
    expect(db.migration.applied).toEqual(later.map(({ version, name }) => ({ version, name })));
    expect(db.prepare(ENTRIES).all()).toEqual(entries);
    expect(db.prepare(CHUNKS).all()).toEqual(chunks);
    expect(db.integrityCheck()).toEqual(["ok"]);
    expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([]);
    expect(db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'vfs_entries'").get()).toEqual({
      seq: largestId,
    });

    const fresh = new VfsStore(db);
    const after = fresh.namespace();
    expect(after.readFile("/docs/big.bin").equals(big)).toBe(true);
    expect(after.stat("/docs/a.txt").metadata).toEqual({ type: "text" });
    expect(after.readdir("/")).toEqual([
      { name: "docs", kind: "directory" },
      { name: "empty", kind: "directory" },
    ]);
    after.commitStaged("/staged.bin", staged);
    expect(after.stat("/staged.bin").size).toBe(VFS_CHUNK_BYTES + 1);
    // Chunks still belong to their entries: removing a file removes its chunks.
    after.rm("/docs/big.bin");
    expect(db.prepare("SELECT count(*) AS n FROM vfs_chunks").get()).toEqual({ n: 2 });
    db.close();
  });

  it("gives a rewritten or re-created file a new id, so its fingerprint changes", () => {
    const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
    const vfs = new VfsStore(db).namespace();
    const idOf = (path: string) =>
      db.prepare("SELECT id FROM vfs_entries WHERE path = ?").get(path)?.id as number;
    vfs.writeFile("/p/a", "1", { parents: true });
    const first = idOf("/p/a");
    const fingerprint = vfs.fingerprint("/p");
    vfs.writeFile("/p/a", "2"); // same size, possibly the same millisecond
    expect(idOf("/p/a")).toBeGreaterThan(first);
    expect(vfs.fingerprint("/p")).not.toBe(fingerprint);
    const second = idOf("/p/a");
    vfs.rm("/p/a");
    vfs.writeFile("/p/a", "2");
    expect(idOf("/p/a")).toBeGreaterThan(second);
    expect(() =>
      db
        .prepare(
          "INSERT INTO vfs_entries (namespace, path, parent, kind, updated_at) VALUES ('s', '/x', '/', 'link', 0)",
        )
        .run(),
    ).toThrow(/CHECK constraint failed/);
    db.close();
  });
});
