import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import type {
  DriverOpenOptions,
  SqlDriver,
  SqlParams,
  SqlRunResult,
  SqlStatement,
} from "./driver.js";
import {
  refuseRetired,
  StateError,
  type StatementOwner,
  statementError,
  wrapSqliteError,
} from "./errors.js";

type BetterSqlite3Constructor = typeof BetterSqlite3;
let loaded: BetterSqlite3Constructor | undefined;

/**
 * better-sqlite3 is an optional dependency (a native addon, built for one Node ABI), so it is
 * loaded on first use only: a process on node:sqlite never needs it installed.
 */
export function loadBetterSqlite3(): BetterSqlite3Constructor {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)("better-sqlite3") as BetterSqlite3Constructor;
    return loaded;
  } catch (error) {
    throw new StateError(
      "E_UNSUPPORTED",
      `the better-sqlite3 driver cannot load on Node ${process.versions.node} (is the optional package installed and built for this Node?): ${(error as Error).message}`,
      { cause: error, details: { driver: "better-sqlite3", node: process.versions.node } },
    );
  }
}

class BetterSqlite3Statement<Row> implements SqlStatement<Row> {
  constructor(
    private readonly statement: BetterSqlite3.Statement,
    private readonly owner: StatementOwner,
  ) {}

  run(...params: SqlParams): SqlRunResult {
    refuseRetired(this.owner);
    try {
      return this.statement.run(...params);
    } catch (error) {
      throw statementError(error, this.owner);
    }
  }

  get(...params: SqlParams): Row | undefined {
    refuseRetired(this.owner);
    try {
      return this.statement.get(...params) as Row | undefined;
    } catch (error) {
      throw statementError(error, this.owner);
    }
  }

  all(...params: SqlParams): Row[] {
    refuseRetired(this.owner);
    try {
      return this.statement.all(...params) as Row[];
    } catch (error) {
      throw statementError(error, this.owner);
    }
  }

  iterate(...params: SqlParams): IterableIterator<Row> {
    refuseRetired(this.owner);
    try {
      return this.statement.iterate(...params) as IterableIterator<Row>;
    } catch (error) {
      throw statementError(error, this.owner);
    }
  }
}

class BetterSqlite3Driver implements SqlDriver, StatementOwner {
  readonly name = "better-sqlite3";
  closedReason: string | undefined;
  retired = false;

  constructor(
    private readonly db: BetterSqlite3.Database,
    readonly path: string,
  ) {}

  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  get open(): boolean {
    return !this.retired && this.db.open;
  }

  prepare<Row>(sql: string): SqlStatement<Row> {
    try {
      return new BetterSqlite3Statement<Row>(this.db.prepare(sql), this);
    } catch (error) {
      throw wrapSqliteError(error, this.path);
    }
  }

  exec(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (error) {
      throw wrapSqliteError(error, this.path);
    }
  }

  close(reason?: string): void {
    this.closedReason = reason;
    this.db.close();
  }

  retire(reason?: string): void {
    this.closedReason = reason;
    this.retired = true;
  }
}

export function openBetterSqlite3(path: string, options: DriverOpenOptions = {}): SqlDriver {
  const BetterSqlite3 = loadBetterSqlite3();
  try {
    const db = new BetterSqlite3(path, {
      readonly: options.readonly ?? false,
      fileMustExist: options.fileMustExist ?? false,
    });
    try {
      if (options.recovery) {
        db.unsafeMode(true); // lifts SQLITE_DBCONFIG_DEFENSIVE, which disables writable_schema
        db.pragma("writable_schema = ON");
      }
      for (const name of options.inertModules ?? []) {
        // A module of better-sqlite3's own has no xIntegrity (its sqlite3_module is version 0).
        db.table(name, { columns: ["inert"], *rows() {} });
      }
    } catch (error) {
      db.close();
      throw error;
    }
    return new BetterSqlite3Driver(db, path);
  } catch (error) {
    throw wrapSqliteError(error, path);
  }
}
