import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import type {
  DriverOpenOptions,
  SqlDriver,
  SqlParams,
  SqlRunResult,
  SqlStatement,
  SqlValue,
} from "./driver.js";
import {
  refuseRetired,
  StateError,
  type StatementOwner,
  statementError,
  wrapSqliteError,
} from "./errors.js";
import { sqliteCodeName } from "./sqlite-codes.js";

// The part of node:sqlite agentstate calls, declared here: the project's Node types predate it.
type NodeRow = Record<string, unknown>;
interface NodeStatement {
  run(...params: unknown[]): SqlRunResult;
  get(...params: unknown[]): NodeRow | undefined;
  all(...params: unknown[]): NodeRow[];
  iterate(...params: unknown[]): IterableIterator<NodeRow>;
  setAllowUnknownNamedParameters(enabled: boolean): void;
}
export interface NodeDatabase {
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
  prepare(sql: string): NodeStatement;
  exec(sql: string): void;
  close(): void;
}
export interface NodeSqliteModule {
  DatabaseSync: new (
    path: string,
    options?: { readOnly?: boolean; timeout?: number },
  ) => NodeDatabase;
}

/** better-sqlite3's default wait on a locked database; node:sqlite's is none. */
const DEFAULT_BUSY_MS = 5000;

/** node:sqlite's errors carry SQLite's result code as a number: named here as better-sqlite3 does. */
function wrapNodeError(error: unknown, path: string): unknown {
  if (!(error instanceof Error)) return error;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (code === "ERR_SQLITE_ERROR" && typeof errcode === "number") {
    const named = Object.assign(new Error(error.message), { code: sqliteCodeName(errcode) });
    const wrapped = wrapSqliteError(named, path);
    if (wrapped instanceof StateError) return rewrap(wrapped, error);
    return wrapped;
  }
  if (code === "ERR_OUT_OF_RANGE") {
    return new StateError(
      "E_TOO_LARGE",
      `${error.message} (database ${path}): node:sqlite reads integers only within ±2^53-1`,
      { cause: error, details: { path } },
    );
  }
  return error;
}

/** Keeps node:sqlite's own error as the cause, so its stack and errcode stay reachable. */
function rewrap(wrapped: StateError, original: Error): StateError {
  return new StateError(wrapped.code, wrapped.message, {
    cause: original,
    details: wrapped.details,
  });
}

function isNamed(value: unknown): value is Record<string, SqlValue | undefined> {
  return typeof value === "object" && value !== null && !(value instanceof Uint8Array);
}

function needsMapping(value: unknown): boolean {
  return value === undefined || (isNamed(value) && Object.values(value).includes(undefined));
}

function toBindable(value: unknown): unknown {
  if (value === undefined) return null;
  if (!isNamed(value)) return value;
  const out: Record<string, SqlValue> = {};
  for (const key of Object.keys(value)) out[key] = value[key] ?? null;
  return out;
}

/** better-sqlite3 binds `undefined` as NULL; node:sqlite refuses it. */
function bindable(params: SqlParams): unknown[] {
  const values = params as readonly unknown[];
  return values.some(needsMapping) ? values.map(toBindable) : (values as unknown[]);
}

/**
 * Rows as better-sqlite3 gives them: plain objects, BLOBs as Buffers (node:sqlite gives
 * null-prototype objects and bare Uint8Arrays, which code calling `toString("utf8")` would misread).
 */
function plainRow(row: NodeRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in row) {
    const value = row[key];
    out[key] =
      value instanceof Uint8Array
        ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
        : value;
  }
  return out;
}

class NodeSqliteStatement<Row> implements SqlStatement<Row> {
  constructor(
    private readonly statement: NodeStatement,
    private readonly owner: StatementOwner,
  ) {}

  run(...params: SqlParams): SqlRunResult {
    refuseRetired(this.owner);
    try {
      return this.statement.run(...bindable(params));
    } catch (error) {
      throw this.failure(error);
    }
  }

  get(...params: SqlParams): Row | undefined {
    refuseRetired(this.owner);
    try {
      const row = this.statement.get(...bindable(params));
      return (row === undefined ? undefined : plainRow(row)) as Row | undefined;
    } catch (error) {
      throw this.failure(error);
    }
  }

  all(...params: SqlParams): Row[] {
    refuseRetired(this.owner);
    try {
      return this.statement.all(...bindable(params)).map(plainRow) as Row[];
    } catch (error) {
      throw this.failure(error);
    }
  }

  private failure(error: unknown): unknown {
    return this.owner.open
      ? wrapNodeError(error, this.owner.path)
      : statementError(error, this.owner);
  }

  *iterate(...params: SqlParams): IterableIterator<Row> {
    refuseRetired(this.owner);
    let rows: IterableIterator<NodeRow>;
    try {
      rows = this.statement.iterate(...bindable(params));
    } catch (error) {
      throw this.failure(error);
    }
    try {
      while (true) {
        let next: IteratorResult<NodeRow>;
        try {
          next = rows.next();
        } catch (error) {
          throw this.failure(error);
        }
        if (next.done) return;
        yield plainRow(next.value) as Row;
      }
    } finally {
      // A loop left early resets the statement, ending its read of the database.
      rows.return?.();
    }
  }
}

class NodeSqliteDriver implements SqlDriver, StatementOwner {
  readonly name = "node";
  closedReason: string | undefined;
  retired = false;

  constructor(
    private readonly db: NodeDatabase,
    readonly path: string,
  ) {}

  get inTransaction(): boolean {
    return this.db.isTransaction;
  }

  get open(): boolean {
    return !this.retired && this.db.isOpen;
  }

  prepare<Row>(sql: string): SqlStatement<Row> {
    try {
      const statement = this.db.prepare(sql);
      // better-sqlite3 ignores keys of a named-parameter object that the SQL does not use.
      statement.setAllowUnknownNamedParameters(true);
      return new NodeSqliteStatement<Row>(statement, this);
    } catch (error) {
      throw wrapNodeError(error, this.path);
    }
  }

  exec(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (error) {
      throw wrapNodeError(error, this.path);
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

let loaded: NodeSqliteModule | null | undefined;

/** node:sqlite, or null on a Node without it. */
export function loadNodeSqlite(): NodeSqliteModule | null {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)("node:sqlite") as NodeSqliteModule;
  } catch {
    loaded = null;
  }
  return loaded;
}

function cannotOpen(path: string): StateError {
  const error = Object.assign(new Error("unable to open database file"), {
    code: "SQLITE_CANTOPEN",
  });
  return wrapSqliteError(error, path) as StateError;
}

export function openNodeSqlite(path: string, options: DriverOpenOptions = {}): SqlDriver {
  const sqlite = loadNodeSqlite();
  if (!sqlite) {
    throw new StateError("E_UNSUPPORTED", `Node ${process.versions.node} has no node:sqlite`, {
      details: { driver: "node", node: process.versions.node },
    });
  }
  if ((options.inertModules ?? []).length > 0) {
    throw new StateError(
      "E_UNSUPPORTED",
      "the node:sqlite driver cannot define virtual-table modules (inertModules); use better-sqlite3 for a split integrity check",
      { details: { driver: "node", path } },
    );
  }
  // node:sqlite always creates a missing file unless read-only.
  if (options.fileMustExist && !options.readonly && !existsSync(path)) throw cannotOpen(path);
  try {
    const db = new sqlite.DatabaseSync(path, {
      readOnly: options.readonly ?? false,
      timeout: DEFAULT_BUSY_MS,
    });
    if (options.recovery) {
      // SQLITE_DBCONFIG_DEFENSIVE off, as better-sqlite3's unsafeMode: it disables writable_schema.
      (db as unknown as { enableDefensive(on: boolean): void }).enableDefensive(false);
      db.exec("PRAGMA writable_schema = ON");
    }
    return new NodeSqliteDriver(db, path);
  } catch (error) {
    throw wrapNodeError(error, path);
  }
}
