// A bare connection for tests that build or inspect files behind the library's back, on the
// engine this process runs (better-sqlite3 itself, or node:sqlite behind the same few calls).
import { createRequire } from "node:module";
import { chooseDriver } from "../driver-choice.js";
import { loadNodeSqlite, type NodeDatabase } from "../node-sqlite-driver.js";

export interface RawStatement {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Rows as their first column's value. */
  pluck(): { get(...params: unknown[]): unknown; all(...params: unknown[]): unknown[] };
}

export interface RawSqlite {
  prepare(sql: string): RawStatement;
  exec(sql: string): void;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  /** Lifts SQLITE_DBCONFIG_DEFENSIVE, which guards writes to the schema and shadow tables. */
  unsafeMode(on: boolean): void;
  close(): void;
}

export interface RawOptions {
  readonly?: boolean;
  fileMustExist?: boolean;
}

type NodeStatement = ReturnType<NodeDatabase["prepare"]>;

function firstValue(row: unknown): unknown {
  return row === undefined ? undefined : Object.values(row as object)[0];
}

function nodeStatement(statement: NodeStatement): RawStatement {
  return {
    run: (...params) => statement.run(...params),
    get: (...params) => statement.get(...params),
    all: (...params) => statement.all(...params),
    pluck: () => ({
      get: (...params) => firstValue(statement.get(...params)),
      all: (...params) => statement.all(...params).map(firstValue),
    }),
  };
}

function openNodeRaw(path: string, options: RawOptions): RawSqlite {
  const sqlite = loadNodeSqlite();
  if (!sqlite) throw new Error("node:sqlite is missing");
  const db = new sqlite.DatabaseSync(path, { readOnly: options.readonly ?? false, timeout: 5000 });
  const raw: RawSqlite = {
    prepare: (sql) => nodeStatement(db.prepare(sql)),
    exec: (sql) => db.exec(sql),
    pragma: (source, pragmaOptions) => {
      const rows = db.prepare(`PRAGMA ${source}`).all();
      return pragmaOptions?.simple ? firstValue(rows[0]) : rows;
    },
    unsafeMode: (on) =>
      (db as unknown as { enableDefensive(on: boolean): void }).enableDefensive(!on),
    close: () => db.close(),
  };
  return raw;
}

export function openRawSqlite(path: string, options: RawOptions = {}): RawSqlite {
  if (chooseDriver() === "node") return openNodeRaw(path, options);
  const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3");
  return new BetterSqlite3(path, options) as RawSqlite;
}
