/**
 * The few calls agentstate makes of a SQLite engine. Stores and the schema runner use only this, so
 * each engine (better-sqlite3, the built-in node:sqlite) is one adapter, not a rewrite.
 */
export type SqlValue = string | number | bigint | Uint8Array | null;
export type SqlParams = readonly SqlValue[] | [Readonly<Record<string, SqlValue>>];

/** The engines agentstate can run on; see `driver-choice.ts` for which one a process gets. */
export const DRIVER_NAMES = ["node", "better-sqlite3"] as const;
export type DriverName = (typeof DRIVER_NAMES)[number];

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
  /** The engine behind this connection. */
  readonly name: DriverName;
  readonly path: string;
  readonly inTransaction: boolean;
  readonly open: boolean;
  prepare<Row = Record<string, unknown>>(sql: string): SqlStatement<Row>;
  exec(sql: string): void;
  /** `reason` becomes the message of the `E_CLOSED` a later use of the connection gets. */
  close(reason?: string): void;
  /**
   * Refuses every later use as `close(reason)` would (`open` turns false), while the connection
   * itself stays open until `close`: its close can then wait for a moment when it is cheap.
   */
  retire?(reason?: string): void;
}

export interface DriverOpenOptions {
  readonly?: boolean;
  /** Fail instead of creating the file. */
  fileMustExist?: boolean;
  /**
   * Virtual-table modules (e.g. `fts5`) replaced, on this connection only, by one that reads no
   * rows and has no integrity check, so that `PRAGMA integrity_check` leaves their tables out
   * (SQLite checks a virtual table only through its module's own check). Nothing else may be done
   * with those tables on such a connection. Only better-sqlite3 can define a module: node:sqlite
   * refuses this option with `E_UNSUPPORTED`.
   */
  inertModules?: readonly string[];
  /**
   * For reading what is left of a damaged file (salvage only): SQLite then loads a schema it finds
   * inconsistent with the file (a truncated file, say) instead of refusing every statement.
   */
  recovery?: boolean;
}

export type DriverFactory = (path: string, options: DriverOpenOptions) => SqlDriver;
