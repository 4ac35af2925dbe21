import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { descriptorsOn } from "../test-support/descriptors.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { openDatabase } from "./database.js";
import { chooseDriver, driverFactory } from "./driver-choice.js";
import { openRawSqlite } from "./test-support/raw-sqlite.js";
import { WalKeeper } from "./wal-keeper.js";

const tempDir = useTempDirs();

/** An incremental database with about 20 MiB on its freelist. */
function withFreePages(): string {
  const path = join(tempDir(), "agent.sqlite");
  const db = openDatabase({ path, role: "agent", checkpoints: "inline" });
  db.exec("CREATE TABLE filler (id INTEGER PRIMARY KEY, body BLOB)");
  db.tx(() =>
    db.exec(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) INSERT INTO filler (body) SELECT randomblob(4000) FROM n",
    ),
  );
  db.exec("DELETE FROM filler");
  db.checkpoint("TRUNCATE");
  db.close();
  return path;
}

const freePages = (raw: ReturnType<typeof openRawSqlite>) =>
  raw.pragma("freelist_count", { simple: true }) as number;

describe("WalKeeper: free pages", () => {
  it("gives back one bounded step per quiet round; a step refused by another writer neither stalls nor drops the database", () => {
    const path = withFreePages();
    const raw = openRawSqlite(path);
    const before = freePages(raw);
    expect(before).toBeGreaterThan(4900);
    const keeper = new WalKeeper({ idleMs: 3000 });
    keeper.activate(path, driverFactory(chooseDriver()), 0);

    raw.exec("BEGIN IMMEDIATE"); // another writer holds the lock
    const started = Date.now();
    keeper.tick(1000);
    expect(Date.now() - started).toBeLessThan(500);
    raw.exec("COMMIT");
    expect(keeper.size).toBe(1);
    expect(freePages(raw)).toBe(before);

    keeper.tick(1001);
    expect(freePages(raw)).toBe(before - 256);
    // Still owed: kept past the idle time, while a database with nothing to give back is let go.
    keeper.tick(10_000);
    expect(keeper.size).toBe(1);
    for (let now = 10_001; freePages(raw) > 0 && now < 10_200; now++) keeper.tick(now);
    expect(freePages(raw) * 4096).toBeLessThanOrEqual(1024 * 1024);
    keeper.tick(20_000);
    expect(keeper.size).toBe(0);
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    raw.close();
  });
});

describe("WalKeeper", () => {
  it("holds at most maxKept connections, letting go of the one written least recently", () => {
    const dir = tempDir();
    const paths = ["a", "b", "c"].map((name) => join(dir, `${name}.sqlite`));
    const writers = paths.map((path) =>
      openDatabase({ path, role: "agent", checkpoints: "inline" }),
    );
    const keeper = new WalKeeper({ maxKept: 2 });
    const factory = driverFactory(chooseDriver());
    try {
      // Each writer's own connection holds one descriptor of its -wal; a kept one adds a second.
      keeper.activate(paths[0] as string, factory, 1);
      keeper.activate(paths[1] as string, factory, 2);
      keeper.activate(paths[0] as string, factory, 3);
      keeper.activate(paths[2] as string, factory, 4);
      expect(keeper.size).toBe(2);
      expect(paths.map((path) => descriptorsOn(`${path}-wal`))).toEqual([2, 1, 2]);
    } finally {
      keeper.dropAll();
      for (const writer of writers) writer.close();
    }
  });
});

describe("WalKeeper: holding a file", () => {
  it("holds a file from activate on, before any round: the writer's close leaves the WAL to the keeper, whose close copies it back", () => {
    const path = join(tempDir(), "agent.sqlite");
    const writer = openRawSqlite(path);
    writer.pragma("journal_mode = WAL");
    writer.pragma("wal_autocheckpoint = 0");
    writer.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)");
    const insert = writer.prepare("INSERT INTO t (body) VALUES (?)");
    for (let i = 0; i < 50; i++) insert.run(`row ${i}`);
    const walBytes = statSync(`${path}-wal`).size;
    expect(walBytes).toBeGreaterThan(0);

    const keeper = new WalKeeper({ idleMs: 3000 });
    keeper.activate(path, driverFactory(chooseDriver()), 0);
    writer.close();
    // Not the last connection: SQLite neither copied the WAL back nor removed it.
    expect(statSync(`${path}-wal`).size).toBe(walBytes);

    keeper.drop(path);
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reader = openRawSqlite(path, { fileMustExist: true, readonly: true });
    expect(reader.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 50 });
    reader.close();
  });
});
