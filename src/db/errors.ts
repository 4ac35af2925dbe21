/**
 * One error class for everything agentstate refuses or fails at. `code` is stable and meant for
 * programs (the CLI maps it to an exit code, the server to an HTTP status); `message` is for people
 * and names the file, key or row at fault.
 */
export const STATE_ERROR_CODES = [
  "E_BUSY",
  "E_CLOSED",
  "E_CONFLICT",
  "E_CONSTRAINT",
  "E_CORRUPT",
  "E_CORRUPT_SOURCE",
  "E_DAMAGED",
  "E_INVALID_ARGUMENT",
  "E_INVALID_ID",
  "E_IO",
  "E_LEASE_LOST",
  "E_NOT_A_DATABASE",
  "E_NOT_FOUND",
  "E_NOT_OWNER",
  "E_PATH",
  "E_SCHEMA_MISMATCH",
  "E_SCHEMA_TOO_NEW",
  "E_SQLITE",
  "E_TOO_LARGE",
  "E_UNSAFE_FILESYSTEM",
  "E_UNSUPPORTED",
] as const;

export type StateErrorCode = (typeof STATE_ERROR_CODES)[number];

export interface StateErrorOptions {
  cause?: unknown;
  /** Extra machine-readable context (path, key, line …), printed by `--json` outputs. */
  details?: Record<string, unknown>;
}

export class StateError extends Error {
  override readonly name = "StateError";
  readonly code: StateErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: StateErrorCode, message: string, options: StateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
  }

  toJSON(): { code: StateErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/**
 * A StateError built again from the parts another thread sent (its `toJSON()`): a code this
 * release does not know becomes `E_IO`.
 */
export function stateErrorFrom(parts: {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}): StateError {
  const known = (STATE_ERROR_CODES as readonly string[]).includes(parts.code);
  const code = (known ? parts.code : "E_IO") as StateErrorCode;
  return new StateError(code, parts.message, { details: parts.details ?? {} });
}

export function isStateError(error: unknown, code?: StateErrorCode): error is StateError {
  return error instanceof StateError && (code === undefined || error.code === code);
}

interface SqliteLikeError {
  code: string;
  message: string;
}

function isSqliteLikeError(error: unknown): error is SqliteLikeError {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && code.startsWith("SQLITE_");
}

/** What a statement needs to know of its connection to explain a failure. */
export interface StatementOwner {
  readonly path: string;
  readonly open: boolean;
  /** Why the connection was closed, when its closer said (an evicted agent, say). */
  readonly closedReason: string | undefined;
  /** Refusing every use while its close waits to happen (see `SqlDriver.retire`). */
  readonly retired: boolean;
}

/** `E_CLOSED` for a use of a closed connection, with the closer's reason when there is one. */
export function closedError(path: string, reason?: string): StateError {
  return new StateError("E_CLOSED", reason ?? `database is closed: ${path}`, {
    details: { path },
  });
}

/** A statement's failure: `E_CLOSED` once its connection is closed, else the wrapped error. */
/** A statement of a retired connection runs nothing: `E_CLOSED`, as once it is closed. */
export function refuseRetired(owner: StatementOwner): void {
  if (owner.retired) throw closedError(owner.path, owner.closedReason);
}

export function statementError(error: unknown, owner: StatementOwner): unknown {
  return owner.open
    ? wrapSqliteError(error, owner.path)
    : closedError(owner.path, owner.closedReason);
}

/**
 * Maps a driver error to a StateError once, at the database boundary, so code above `db/` only
 * ever sees StateError codes. Anything that is not a SQLite error passes through unchanged.
 */
export function wrapSqliteError(error: unknown, dbPath: string): unknown {
  if (!isSqliteLikeError(error)) return error;
  const sqliteCode = error.code;
  const details = { path: dbPath, sqliteCode };
  const where = `${error.message} (database ${dbPath})`;
  if (sqliteCode.startsWith("SQLITE_BUSY") || sqliteCode.startsWith("SQLITE_LOCKED")) {
    return new StateError("E_BUSY", `database is busy: ${where}`, { cause: error, details });
  }
  if (sqliteCode === "SQLITE_NOTADB") {
    return new StateError("E_NOT_A_DATABASE", `not a SQLite database: ${dbPath}`, {
      cause: error,
      details,
    });
  }
  if (sqliteCode.startsWith("SQLITE_CORRUPT")) {
    return new StateError("E_CORRUPT", `database is corrupt: ${where}`, { cause: error, details });
  }
  if (sqliteCode.startsWith("SQLITE_CONSTRAINT")) {
    return new StateError("E_CONSTRAINT", where, { cause: error, details });
  }
  if (sqliteCode.startsWith("SQLITE_TOOBIG")) {
    return new StateError("E_TOO_LARGE", where, { cause: error, details });
  }
  if (sqliteCode.startsWith("SQLITE_IOERR") || sqliteCode.startsWith("SQLITE_FULL")) {
    return new StateError("E_IO", where, { cause: error, details });
  }
  return new StateError("E_SQLITE", where, { cause: error, details });
}
