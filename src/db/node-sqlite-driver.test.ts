import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../test-support/temp-dir.js";
import { nodeSqliteSupport } from "./driver-choice.js";
import { isStateError } from "./errors.js";
import { openNodeSqlite } from "./node-sqlite-driver.js";
import { sqliteCodeName } from "./sqlite-codes.js";

const tempDir = useTempDirs();

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isStateError(error) ? `${error.code} ${String(error.details.sqliteCode ?? "")}` : "?";
  }
  return undefined;
}

describe("sqliteCodeName", () => {
  it("names primary and constraint codes as better-sqlite3 does", () => {
    expect(sqliteCodeName(5)).toBe("SQLITE_BUSY");
    expect(sqliteCodeName(517)).toBe("SQLITE_BUSY"); // SQLITE_BUSY_SNAPSHOT
    expect(sqliteCodeName(26)).toBe("SQLITE_NOTADB");
    expect(sqliteCodeName(2067)).toBe("SQLITE_CONSTRAINT_UNIQUE");
    expect(sqliteCodeName(787)).toBe("SQLITE_CONSTRAINT_FOREIGNKEY");
    expect(sqliteCodeName(266)).toBe("SQLITE_IOERR"); // SQLITE_IOERR_READ
  });
});

// node:sqlite exists on the suite's Node 24 run only; there every store test runs on it too.
describe.runIf(nodeSqliteSupport().ok)("the node:sqlite driver", () => {
  function open(name = "n.sqlite") {
    const driver = openNodeSqlite(join(tempDir(), name), {});
    driver.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v BLOB, n INTEGER)");
    return driver;
  }

  it("gives rows as plain objects and BLOBs as Buffers", () => {
    const driver = open();
    driver.prepare("INSERT INTO t (k, v) VALUES (?, ?)").run("a", new Uint8Array([1, 2, 3]));
    const row = driver.prepare<{ k: string; v: Buffer }>("SELECT k, v FROM t").get();
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Buffer.isBuffer(row?.v)).toBe(true);
    expect(row?.v.toString("hex")).toBe("010203");
    driver.close();
  });

  it("binds undefined as NULL and ignores named keys the SQL does not use", () => {
    const driver = open();
    driver.prepare("INSERT INTO t (k, n) VALUES (?, ?)").run("a", undefined as never);
    driver
      .prepare("INSERT INTO t (k, n) VALUES (@k, @n)")
      .run({ k: "b", n: undefined, extra: 1 } as never);
    expect(driver.prepare("SELECT k, n FROM t ORDER BY k").all()).toEqual([
      { k: "a", n: null },
      { k: "b", n: null },
    ]);
    driver.close();
  });

  it("maps SQLite's failures to StateError codes", () => {
    const driver = open();
    const insert = driver.prepare("INSERT INTO t (k) VALUES (?)");
    insert.run("a");
    expect(codeOf(() => insert.run("a"))).toBe("E_CONSTRAINT SQLITE_CONSTRAINT_UNIQUE");
    driver.prepare("INSERT INTO t (k, n) VALUES ('big', ?)").run(2n ** 60n);
    expect(codeOf(() => driver.prepare("SELECT n FROM t WHERE k = 'big'").get())).toBe(
      "E_TOO_LARGE ",
    );
    expect(codeOf(() => driver.exec("SELECT * FROM nope"))).toBe("E_SQLITE SQLITE_ERROR");
    driver.close();
  });

  it("refuses inert modules by name, and a missing file it must not create", () => {
    const path = join(tempDir(), "absent.sqlite");
    expect(codeOf(() => openNodeSqlite(path, { inertModules: ["fts5"] }))).toBe("E_UNSUPPORTED ");
    expect(codeOf(() => openNodeSqlite(path, { fileMustExist: true }))).toBe(
      "E_SQLITE SQLITE_CANTOPEN",
    );
    expect(existsSync(path)).toBe(false);
  });

  it("a loop left early ends its read: a checkpoint can then empty the WAL", () => {
    const driver = open("wal.sqlite");
    driver.exec("PRAGMA journal_mode = WAL");
    const insert = driver.prepare("INSERT INTO t (k) VALUES (?)");
    for (let i = 0; i < 5; i++) insert.run(`k${i}`);
    for (const _row of driver.prepare("SELECT * FROM t").iterate()) break;
    const writer = openNodeSqlite(driver.path, {});
    writer.prepare("INSERT INTO t (k) VALUES ('late')").run();
    const checkpoint = writer.prepare<{ busy: number }>("PRAGMA wal_checkpoint(TRUNCATE)").get();
    expect(checkpoint?.busy).toBe(0);
    writer.close();
    driver.close();
  });
});
