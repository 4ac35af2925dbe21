import BetterSqlite3 from "better-sqlite3";
import type {
  DriverOpenOptions,
  SqlDriver,
  SqlParams,
  SqlRunResult,
  SqlStatement,
} from "./driver.js";
import { wrapSqliteError } from "./errors.js";

class BetterSqlite3Statement<Row> implements SqlStatement<Row> {
  constructor(
    private readonly statement: BetterSqlite3.Statement,
    private readonly dbPath: string,
  ) {}

  run(...params: SqlParams): SqlRunResult {
    try {
      return this.statement.run(...params);
    } catch (error) {
      throw wrapSqliteError(error, this.dbPath);
    }
  }

  get(...params: SqlParams): Row | undefined {
    try {
      return this.statement.get(...params) as Row | undefined;
    } catch (error) {
      throw wrapSqliteError(error, this.dbPath);
    }
  }

  all(...params: SqlParams): Row[] {
    try {
      return this.statement.all(...params) as Row[];
    } catch (error) {
      throw wrapSqliteError(error, this.dbPath);
    }
  }

  iterate(...params: SqlParams): IterableIterator<Row> {
    try {
      return this.statement.iterate(...params) as IterableIterator<Row>;
    } catch (error) {
      throw wrapSqliteError(error, this.dbPath);
    }
  }
}

class BetterSqlite3Driver implements SqlDriver {
  constructor(
    private readonly db: BetterSqlite3.Database,
    readonly path: string,
  ) {}

  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  get open(): boolean {
    return this.db.open;
  }

  prepare<Row>(sql: string): SqlStatement<Row> {
    try {
      return new BetterSqlite3Statement<Row>(this.db.prepare(sql), this.path);
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

  close(): void {
    this.db.close();
  }
}

export function openBetterSqlite3(path: string, options: DriverOpenOptions = {}): SqlDriver {
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
