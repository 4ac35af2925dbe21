import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { openDatabase } from "./database.js";
import { isStateError, StateError } from "./errors.js";
import { latestSchemaVersion } from "./schema.js";
import { openRawSqlite } from "./test-support/raw-sqlite.js";

const tempDir = useTempDirs();

describe("openDatabase", () => {
  it("sets the connection pragmas on every open", () => {
    const path = join(tempDir(), "a", "db.sqlite");
    for (let i = 0; i < 2; i++) {
      const db = openDatabase({ path, role: "agent" });
      expect(db.pragma("journal_mode")).toBe("wal");
      expect(db.pragma("synchronous")).toBe(1); // NORMAL
      expect(db.pragma("busy_timeout")).toBe(30000);
      expect(db.pragma("foreign_keys")).toBe(1);
      expect(db.schemaVersion).toBe(latestSchemaVersion("agent"));
      db.close();
    }
  });

  it("prepares a statement made with prepareOnUse at its first use, and fails a use after close with E_CLOSED", () => {
    const db = openDatabase({ path: join(tempDir(), "db.sqlite"), role: "global" });
    // Prepared now, this would fail: the table does not exist yet.
    const insert = db.prepareOnUse("INSERT INTO later (n) VALUES (?)");
    const count = db.prepareOnUse<{ n: number }>("SELECT count(*) AS n FROM later");
    db.exec("CREATE TABLE later (n INTEGER)");
    insert.run(1);
    insert.run(2);
    expect(count.get()?.n).toBe(2);
    const unused = db.prepareOnUse("SELECT n FROM later");
    db.close("closed for the test");
    expect(() => unused.all()).toThrow(/closed for the test/);
    expect(() => insert.run(3)).toThrow(/closed for the test/);
  });

  it("creates directories 0700 and the database and its sidecars 0600", () => {
    const root = tempDir();
    const dir = join(root, "deep", "er");
    const path = join(dir, "db.sqlite");
    const db = openDatabase({ path, role: "global" });
    db.prepare("INSERT INTO kv VALUES ('s', 'k', '1', 1)").run();
    expect(modeOf(statSync(join(root, "deep")))).toBe(0o700);
    expect(modeOf(statSync(dir))).toBe(0o700);
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      expect(existsSync(file), file).toBe(true);
      expect(modeOf(statSync(file)), file).toBe(0o600);
    }
    db.close();
  });

  it("leaves the mode of a directory it did not create as it was (a database put into /tmp)", () => {
    const shared = join(tempDir(), "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const db = openDatabase({ path: join(shared, "state.sqlite"), role: "global" });
    db.close();
    expect(statSync(shared).mode & 0o7777).toBe(0o1777);
    expect(modeOf(statSync(join(shared, "state.sqlite")))).toBe(0o600);
  });

  it("keeps data across close and reopen", () => {
    const path = join(tempDir(), "db.sqlite");
    const first = openDatabase({ path, role: "agent" });
    first.prepare("INSERT INTO kv VALUES ('scope', 'key', '\"v\"', 5)").run();
    first.close();
    const second = openDatabase({ path, role: "agent" });
    expect(second.prepare("SELECT value_json FROM kv").get()).toEqual({ value_json: '"v"' });
    expect(second.migration.applied).toEqual([]);
    second.close();
  });

  it("refuses a file that is not a database and leaves it untouched", () => {
    const dir = tempDir();
    const path = join(dir, "state.sqlite");
    const garbage = Buffer.from("this is a sessions index, not a database\n".repeat(20));
    writeFileSync(path, garbage);
    let error: unknown;
    try {
      openDatabase({ path, role: "global" });
    } catch (caught) {
      error = caught;
    }
    expect(isStateError(error, "E_NOT_A_DATABASE")).toBe(true);
    expect((error as StateError).message).toContain(path);
    expect(readFileSync(path).equals(garbage)).toBe(true);
    expect(existsSync(`${path}-wal`)).toBe(false);
    expect(existsSync(`${path}-shm`)).toBe(false);
  });

  it("refuses a database with a newer schema and leaves it untouched", () => {
    const path = join(tempDir(), "future.sqlite");
    const raw = openRawSqlite(path);
    raw.exec("CREATE TABLE future (x); PRAGMA user_version = 99;");
    raw.close();
    const before = readFileSync(path);
    const attempt = () => openDatabase({ path, role: "agent" });
    expect(attempt).toThrow(StateError);
    try {
      attempt();
    } catch (error) {
      expect((error as StateError).code).toBe("E_SCHEMA_TOO_NEW");
      expect((error as StateError).message).toContain(path);
      expect((error as StateError).message).toContain("99");
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it("refuses a missing file when create is false", () => {
    const path = join(tempDir(), "missing.sqlite");
    expect(() => openDatabase({ path, role: "agent", create: false })).toThrow(/no database at/);
    expect(existsSync(path)).toBe(false);
  });

  it("rejects unknown options by name", () => {
    const path = join(tempDir(), "x.sqlite");
    expect(() => openDatabase({ path, role: "agent", creat: true } as never)).toThrow(
      /Unknown option for openDatabase: creat/,
    );
  });

  it("wraps SQLite errors in StateError with the database path", () => {
    const path = join(tempDir(), "x.sqlite");
    const db = openDatabase({ path, role: "agent" });
    db.prepare("INSERT INTO kv VALUES ('s', 'k', '1', 1)").run();
    try {
      db.prepare("INSERT INTO kv VALUES ('s', 'k', '1', 1)").run();
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_CONSTRAINT")).toBe(true);
      expect((error as StateError).details.path).toBe(path);
    }
    db.close();
    expect(() => db.prepare("SELECT 1")).toThrow(/database is closed/);
  });
});

describe("Database.tx", () => {
  function open() {
    const db = openDatabase({ path: join(tempDir(), "tx.sqlite"), role: "agent" });
    const insert = db.prepare("INSERT INTO kv VALUES (?, ?, '1', 1)");
    const keys = () =>
      db
        .prepare<{ key: string }>("SELECT key FROM kv ORDER BY key")
        .all()
        .map((r) => r.key);
    return { db, insert, keys };
  }

  it("commits the body and returns its result", () => {
    const { db, insert, keys } = open();
    expect(db.tx(() => insert.run("s", "a").changes)).toBe(1);
    expect(keys()).toEqual(["a"]);
    db.close();
  });

  it("rolls back everything when the body throws", () => {
    const { db, insert, keys } = open();
    expect(() =>
      db.tx(() => {
        insert.run("s", "a");
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(keys()).toEqual([]);
    expect(db.pragma("user_version")).toBe(latestSchemaVersion("agent"));
    db.close();
  });

  it("turns nested calls into savepoints that roll back alone", () => {
    const { db, insert, keys } = open();
    db.tx(() => {
      insert.run("s", "outer");
      expect(() =>
        db.tx(() => {
          insert.run("s", "inner");
          throw new Error("inner fails");
        }),
      ).toThrow("inner fails");
      db.tx(() => insert.run("s", "inner-ok"));
    });
    expect(keys()).toEqual(["inner-ok", "outer"]);
    db.close();
  });

  it("refuses an async body and rolls it back", async () => {
    const { db, insert, keys } = open();
    expect(() =>
      db.tx(async () => {
        insert.run("s", "a");
      }),
    ).toThrow(TypeError);
    expect(keys()).toEqual([]);
    db.close();
  });
});

describe("maintenance helpers", () => {
  it("checkpoints the WAL and checks integrity", () => {
    const path = join(tempDir(), "m.sqlite");
    const db = openDatabase({ path, role: "agent" });
    const insert = db.prepare("INSERT INTO kv VALUES ('s', ?, '1', 1)");
    db.tx(() => {
      for (let i = 0; i < 500; i++) insert.run(`k${i}`);
    });
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(0);
    const result = db.checkpoint("TRUNCATE");
    expect(result.busy).toBe(false);
    expect(statSync(`${path}-wal`).size).toBe(0);
    expect(db.integrityCheck()).toEqual(["ok"]);
    expect(db.quickCheck()).toEqual(["ok"]);
    db.close();
  });

  it("reports corruption through integrityCheck", () => {
    const path = join(tempDir(), "c.sqlite");
    const db = openDatabase({ path, role: "agent" });
    const insert = db.prepare("INSERT INTO kv VALUES ('s', ?, ?, 1)");
    db.tx(() => {
      for (let i = 0; i < 2000; i++) insert.run(`key-${i}`, JSON.stringify("x".repeat(50)));
    });
    db.checkpoint("TRUNCATE");
    const root = db
      .prepare<{ rootpage: number }>("SELECT rootpage FROM sqlite_schema WHERE name = 'kv'")
      .get();
    db.close();
    // Overwrite the body of the kv table's root page (pages count from 1).
    const bytes = readFileSync(path);
    const pageSize = bytes.readUInt16BE(16);
    const offset = pageSize * ((root?.rootpage ?? 2) - 1);
    bytes.fill(0xff, offset + 8, offset + 200);
    writeFileSync(path, bytes);
    const reopened = openDatabase({ path, role: "agent" });
    expect(reopened.integrityCheck()).not.toEqual(["ok"]);
    reopened.close();
  });
});
