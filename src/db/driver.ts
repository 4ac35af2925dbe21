/**
 * The few calls agentstate makes of a SQLite engine. Stores and the schema runner use only this, so
 * a second engine (node:sqlite on newer Node releases) is one more adapter, not a rewrite.
 */
export type SqlValue = string | number | bigint | Uint8Array | null;
export type SqlParams = readonly SqlValue[] | [Readonly<Record<string, SqlValue>>];

export interface SqlRunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

export interface SqlStatement<Row = Record<string, unknown>> {
  run(...params: SqlParams): SqlRunResult;
  get(...params: SqlParams): Row | undefined;
  all(...params: SqlParams): Row[];
  iterate(...params: SqlParams): IterableIterator<Row>;
}

export interface SqlDriver {
  readonly path: string;
  readonly inTransaction: boolean;
  readonly open: boolean;
  prepare<Row = Record<string, unknown>>(sql: string): SqlStatement<Row>;
  exec(sql: string): void;
  close(): void;
}

export interface DriverOpenOptions {
  readonly?: boolean;
  /** Fail instead of creating the file. */
  fileMustExist?: boolean;
  /**
   * Virtual-table modules (e.g. `fts5`) replaced, on this connection only, by one that reads no
   * rows and has no integrity check, so that `PRAGMA integrity_check` leaves their tables out
   * (SQLite checks a virtual table only through its module's own check). Nothing else may be done
   * with those tables on such a connection.
   */
  inertModules?: readonly string[];
  /**
   * For reading what is left of a damaged file (salvage only): SQLite then loads a schema it finds
   * inconsistent with the file (a truncated file, say) instead of refusing every statement.
   */
  recovery?: boolean;
}

export type DriverFactory = (path: string, options: DriverOpenOptions) => SqlDriver;
