import { statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { processCheckpointer } from "./checkpointer.js";
import type { CheckpointRow } from "./checkpointer-protocol.js";
import {
  type CheckpointsMode,
  INLINE_AUTOCHECKPOINT_PAGES,
  JOURNAL_SIZE_LIMIT,
  resolveCheckpoints,
} from "./checkpoints.js";
import { assertNotDamaged } from "./damage-marker.js";
import { CONNECTION_PRAGMAS, createDatabaseFile, prepareConnection } from "./database-file.js";
import type { DriverFactory, DriverName, SqlDriver, SqlStatement } from "./driver.js";
import { chooseDriver, driverFactory } from "./driver-choice.js";
import { closedError, isStateError, StateError } from "./errors.js";
import { ensurePrivateDir, probeDatabaseFile } from "./files.js";
import {
  assertWalSafe,
  filesystemTypeOf,
  type JournalMode,
  resolveJournalMode,
} from "./filesystem.js";
import type { UpgradeProgressListener } from "./layout-upgrade.js";
import { rejectUnknownOptions } from "./options.js";
import {
  DATABASE_ROLES,
  type DatabaseRole,
  latestSchemaVersion,
  type MigrationResult,
} from "./schema.js";

export { CONNECTION_PRAGMAS };

import {
  CALLER_CATCH_UP_BYTES,
  type CatchUpResult,
  isReadOnlySql,
  signalling,
  WalSignal,
} from "./wal-signal.js";

export type CheckpointMode = "PASSIVE" | "FULL" | "RESTART" | "TRUNCATE";

export interface CheckpointResult {
  busy: boolean;
  walFrames: number;
  checkpointedFrames: number;
}

export interface OpenDatabaseOptions {
  path: string;
  role: DatabaseRole;
  /** Create the file (and its directories) when missing. Default true. */
  create?: boolean;
  /**
   * Open an existing database for reading only: nothing on disk changes (no schema migration,
   * no journal-mode switch; the -wal/-shm files a reader needs go again when the last connection
   * closes). Writes fail with a SQLite read-only error.
   */
  readonly?: boolean;
  /**
   * `wal` (default) or `rollback` (`journal_mode=DELETE`, for filesystems where WAL is unsafe:
   * NFS, SMB, overlayfs, virtiofs, 9p, FUSE). Default: `$AGENTSTATE_JOURNAL_MODE` (`wal` or
   * `delete`), else `wal`. WAL on one of those filesystems is refused with E_UNSAFE_FILESYSTEM.
   */
  journalMode?: JournalMode;
  /**
   * The engine: `"node"` (node:sqlite) or `"better-sqlite3"`, or a factory of one's own. Default:
   * `$AGENTSTATE_SQLITE_DRIVER`, else node:sqlite where it is complete, else better-sqlite3.
   */
  driver?: DriverFactory | DriverName;
  /**
   * Told how a data upgrade of an older database is going (it copies rows in bounded
   * transactions before the open returns; a process killed during it resumes on the next open).
   */
  onUpgradeProgress?: UpgradeProgressListener;
  /**
   * Who checkpoints the WAL of a writable database: `"background"` (default) or `"inline"`; see
   * `CheckpointsMode`. Default: `$AGENTSTATE_CHECKPOINTS`, else `background`. Background needs the
   * built package, the main thread, a named driver and WAL; elsewhere the database is `inline`.
   */
  checkpoints?: CheckpointsMode;
}

const OPEN_OPTION_KEYS = new Set([
  "path",
  "role",
  "create",
  "readonly",
  "journalMode",
  "driver",
  "onUpgradeProgress",
  "checkpoints",
]);

/** The connection's busy timeout (CONNECTION_PRAGMAS) and the backstop's much shorter one. */
const BUSY_TIMEOUT_MS = 30_000;
const CATCH_UP_WAIT_MS = 2;
/**
 * A patient catch-up's (wal-signal.ts) wait for readers, for the write lock, and for another
 * connection's checkpoint. SQLite gives up on the checkpoint lock at once, whatever the busy
 * timeout, so that one is tried again every millisecond until this is spent.
 */
const PATIENT_CATCH_UP_MS = 100;
const pause = new Int32Array(new SharedArrayBuffer(4));

/** The statement, with `check` run before each call (it throws to refuse the call). */
function guarded<Row>(statement: SqlStatement<Row>, check: () => void): SqlStatement<Row> {
  return {
    run: (...params) => {
      check();
      return statement.run(...params);
    },
    get: (...params) => {
      check();
      return statement.get(...params);
    },
    all: (...params) => {
      check();
      return statement.all(...params);
    },
    iterate: (...params) => {
      check();
      return statement.iterate(...params);
    },
  };
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** One open SQLite connection with agentstate's pragmas, schema and transaction helper. */
export class Database {
  readonly path: string;
  readonly role: DatabaseRole;
  readonly migration: MigrationResult;
  private readonly driver: SqlDriver;
  private savepointDepth = 0;
  private rolledBack = 0;
  private queryOnly: boolean | undefined;
  /** Transaction-control statements, prepared on first use: parsing them per call was a hot spot. */
  private readonly control = new Map<string, SqlStatement>();
  /** Set while the background checkpointer serves this database (auto-checkpoint off). */
  private signal: WalSignal | null = null;
  private closedReason: string | undefined;
  private readonly closeHooks: (() => void)[] = [];
  private companions = 0;
  private writeGuard: (() => void) | null = null;
  /** Set between `beginClose` and the connection's close: the thread's `adopt` to wait for. */
  private handOffTicket: number | undefined;

  constructor(
    driver: SqlDriver,
    role: DatabaseRole,
    migration: MigrationResult,
    options: { backgroundCheckpoints?: boolean } = {},
  ) {
    this.driver = driver;
    this.path = driver.path;
    this.role = role;
    this.migration = migration;
    if (options.backgroundCheckpoints) {
      this.signal = new WalSignal(processCheckpointer(), this.path, driver.name, {
        fallback: this.toInline,
        catchUp: this.catchUp,
        inTransaction: () => this.inTransaction,
      });
    }
  }

  /**
   * True once the background thread has been told to checkpoint this file: its own connection's
   * descriptor of the file then stays open until this connection closes (SQLite keeps a closed
   * connection's descriptor while another one of the process holds a lock on the file, and a WAL
   * connection always holds one). A pool counts it against its descriptor budget.
   */
  get checkpointerServed(): boolean {
    return this.signal?.announced ?? false;
  }

  /**
   * Descriptors held open for this connection's stores by files of their own (an agent's cold
   * index), which a pool counts against its descriptor budget as it counts `checkpointerServed`.
   */
  get companionDescriptors(): number {
    return this.companions;
  }

  /** Counts one more companion descriptor until the returned function is called. */
  holdDescriptor(): () => void {
    this.companions++;
    let held = true;
    return () => {
      if (held) this.companions--;
      held = false;
    };
  }

  /** Who checkpoints this database's WAL now (`inline` also for read-only and rollback). */
  get checkpoints(): CheckpointsMode {
    return this.signal === null ? "inline" : "background";
  }

  /**
   * The backstop (see `CALLER_CATCH_UP_BYTES`): never inside a transaction, and waiting only
   * when `patient` (see `PATIENT_CATCH_UP_BYTES`).
   */
  private readonly catchUp = (patient: boolean): CatchUpResult => {
    if (!this.driver.open || this.driver.inTransaction) return "owed";
    // RESTART, not TRUNCATE: truncating a file of tens of MiB, then growing it again frame by
    // frame, cost three to four times the checkpoint itself on ext4. The file keeps (at most)
    // CALLER_CATCH_UP_BYTES and the WAL starts over at its start; wal-signal.ts watches for the
    // file to grow past that again.
    // Between its transactions the writer holds no lock and the thread is held off
    // (Checkpointer.whileHeld), so only a reader or another process can be in the way: it waits
    // at most CATCH_UP_WAIT_MS for them, PATIENT_CATCH_UP_MS once the WAL nears its limit
    // (never the connection's 30 s).
    // It runs after the caller's commit succeeded: a checkpoint that fails (busy, another
    // process restarting the WAL at the same moment) must not turn that into an error.
    const waitMs = patient ? PATIENT_CATCH_UP_MS : CATCH_UP_WAIT_MS;
    this.run(`PRAGMA busy_timeout = ${waitMs}`);
    try {
      const restart = this.driver.prepare<CheckpointRow>("PRAGMA wal_checkpoint(RESTART)");
      const deadline = performance.now() + waitMs;
      while (restart.get()?.busy !== 0) {
        if (!patient || performance.now() >= deadline) return "refused";
        Atomics.wait(pause, 0, 0, 1);
      }
      this.restartWal();
      return "restarted";
    } catch {
      return "refused"; // Tried again at a later look (wal-signal.ts).
    } finally {
      this.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  };

  /**
   * SQLite starts the WAL over in the first commit after a complete checkpoint, but only if no
   * other connection holds a read-mark lock at that instant; the thread's next round takes them
   * briefly, and a restart missed that way is missed until the next catch-up. So the writer
   * commits at once, while the thread is still held: the smallest write there is, the schema
   * version rewritten unchanged (read inside the transaction: another process may migrate).
   * For that commit the size limit is the catch-up size: the restart cuts off only the frames
   * written past it since the last check (a few MiB at most), so the file does not creep upward
   * catch-up after catch-up.
   */
  private restartWal(): void {
    this.driver.exec(`PRAGMA journal_size_limit = ${CALLER_CATCH_UP_BYTES}`);
    this.driver.exec("BEGIN IMMEDIATE");
    try {
      const row = this.driver.prepare<{ user_version: number }>("PRAGMA user_version").get();
      this.driver.exec(`PRAGMA user_version = ${row?.user_version ?? 0}`);
      this.driver.exec("COMMIT");
    } catch (error) {
      if (this.driver.inTransaction) this.driver.exec("ROLLBACK");
      throw error;
    } finally {
      this.driver.exec(`PRAGMA journal_size_limit = ${JOURNAL_SIZE_LIMIT}`);
    }
  }

  /** The checkpointer thread died: SQLite's own auto-checkpoint takes over again. */
  private readonly toInline = (): void => {
    this.signal = null;
    if (this.driver.open) {
      this.driver.exec(`PRAGMA wal_autocheckpoint = ${INLINE_AUTOCHECKPOINT_PAGES}`);
    }
  };

  get isOpen(): boolean {
    return this.driver.open;
  }

  /** The engine behind this connection. */
  get driverName(): DriverName {
    return this.driver.name;
  }

  /** True for a connection opened with `readonly` (`query_only`): it cannot write at all. */
  get readonly(): boolean {
    this.queryOnly ??= this.pragma("query_only") === 1;
    return this.queryOnly;
  }

  /**
   * How many `tx()` bodies have been undone on this connection. A cache of rows written in a
   * transaction compares it to know whether they may have been rolled back.
   */
  get rollbacks(): number {
    return this.rolledBack;
  }

  get schemaVersion(): number {
    return this.pragma("user_version") as number;
  }

  /** Files that make up this database on disk while it is open. */
  get files(): readonly string[] {
    return [this.path, `${this.path}-wal`, `${this.path}-shm`];
  }

  prepare<Row = Record<string, unknown>>(sql: string): SqlStatement<Row> {
    this.assertOpen();
    const statement = this.driver.prepare<Row>(sql);
    if (isReadOnlySql(sql)) return statement;
    const watched = this.signal === null ? statement : signalling(statement, this.signal);
    return this.role === "agent" ? guarded(watched, this.autocommitGuard) : watched;
  }

  /**
   * A statement prepared on its first use instead of now: a store made for one call (an append to
   * an agent the pool has just reopened, one search of every agent) prepares the statements that
   * call runs, not the dozens its other methods need.
   */
  prepareOnUse<Row = Record<string, unknown>>(sql: string): SqlStatement<Row> {
    let statement: SqlStatement<Row> | undefined;
    const use = () => {
      statement ??= this.prepare<Row>(sql);
      return statement;
    };
    return {
      run: (...params) => use().run(...params),
      get: (...params) => use().get(...params),
      all: (...params) => use().all(...params),
      iterate: (...params) => use().iterate(...params),
    };
  }

  /** A write statement run outside `tx()` is its own transaction: the guard sees it too. */
  private readonly autocommitGuard = (): void => {
    if (this.writeGuard !== null && !this.driver.inTransaction) this.writeGuard();
  };

  exec(sql: string): void {
    this.assertOpen();
    if (!isReadOnlySql(sql)) this.autocommitGuard();
    this.driver.exec(sql);
    if (this.signal !== null && !isReadOnlySql(sql)) this.signal.wrote();
  }

  /** Reads one pragma's first value (`pragma("user_version")` → 1). */
  pragma(name: string): unknown {
    if (!/^[a-z_]+$/.test(name)) throw new TypeError(`Expected a pragma name, got ${name}`);
    const row = this.prepare(`PRAGMA ${name}`).get();
    return row === undefined ? undefined : Object.values(row)[0];
  }

  /**
   * Runs `fn` in a write transaction and returns its result. The outermost call takes the write
   * lock up front (`BEGIN IMMEDIATE`), so a read-then-write body cannot fail half-way with
   * SQLITE_BUSY; nested calls become savepoints that roll back alone. The body must be synchronous:
   * an async body would commit before its awaits ran.
   */
  tx<T>(fn: () => T): T {
    if (typeof fn !== "function") throw new TypeError("Expected a function for tx()");
    this.assertOpen();
    const nested = this.driver.inTransaction;
    if (!nested) this.writeGuard?.();
    const savepoint = `sp_${++this.savepointDepth}`;
    this.run(nested ? `SAVEPOINT ${savepoint}` : "BEGIN IMMEDIATE");
    try {
      const result = fn();
      if (isPromiseLike(result)) {
        throw new TypeError("Expected a synchronous transaction body; tx() got a Promise");
      }
      this.run(nested ? `RELEASE ${savepoint}` : "COMMIT");
      if (!nested) this.signal?.committed();
      return result;
    } catch (error) {
      // SQLite may already have rolled back on its own (e.g. a full disk): only undo what is open.
      this.rolledBack++;
      if (this.driver.inTransaction) {
        if (nested) {
          this.run(`ROLLBACK TO ${savepoint}`);
          this.run(`RELEASE ${savepoint}`);
        } else this.run("ROLLBACK");
      }
      throw error;
    } finally {
      this.savepointDepth--;
    }
  }

  /**
   * Installs (or, with null, removes) a check run before every outermost `tx()` takes the write
   * lock, and before a write statement of an agent database runs outside one: a throw refuses the
   * write before anything is written. A cluster host uses it to
   * refuse writes to an agent whose lease it may have lost, without a network call.
   */
  setWriteGuard(guard: (() => void) | null): void {
    this.writeGuard = guard;
  }

  /**
   * Runs `fn` in a read transaction (`BEGIN DEFERRED`): every statement in it sees one snapshot,
   * and no write lock is taken, so it works on a read-only connection too. Inside another
   * transaction it simply runs.
   */
  snapshot<T>(fn: () => T): T {
    if (typeof fn !== "function") throw new TypeError("Expected a function for snapshot()");
    this.assertOpen();
    if (this.driver.inTransaction) return fn();
    this.run("BEGIN DEFERRED");
    try {
      const result = fn();
      if (isPromiseLike(result)) {
        throw new TypeError("Expected a synchronous snapshot body; snapshot() got a Promise");
      }
      return result;
    } finally {
      if (this.driver.inTransaction) this.run("COMMIT");
    }
  }

  private run(sql: string): void {
    let statement = this.control.get(sql);
    if (!statement) {
      statement = this.driver.prepare(sql);
      this.control.set(sql, statement);
    }
    statement.run();
  }

  checkpoint(mode: CheckpointMode = "PASSIVE"): CheckpointResult {
    const row = this.prepare<{ busy: number; log: number; checkpointed: number }>(
      `PRAGMA wal_checkpoint(${mode})`,
    ).get();
    return {
      busy: row?.busy === 1,
      walFrames: row?.log ?? 0,
      checkpointedFrames: row?.checkpointed ?? 0,
    };
  }

  /** `PRAGMA integrity_check`: `["ok"]` when healthy, else the problems found. Never throws for corruption. */
  integrityCheck(): string[] {
    return this.check("integrity_check");
  }

  /** `PRAGMA quick_check`: the cheaper check (no index-content cross-check). */
  quickCheck(): string[] {
    return this.check("quick_check");
  }

  private check(pragma: "integrity_check" | "quick_check"): string[] {
    try {
      return this.prepare<Record<string, string>>(`PRAGMA ${pragma}`)
        .all()
        .map((row) => String(Object.values(row)[0]));
    } catch (error) {
      // Damage bad enough to stop the check itself is still an answer, not a crash.
      if (isStateError(error, "E_CORRUPT") || isStateError(error, "E_NOT_A_DATABASE")) {
        return [error.message];
      }
      throw error;
    }
  }

  /** Bytes of the database file plus its WAL. */
  sizeBytes(): number {
    let total = 0;
    for (const file of [this.path, `${this.path}-wal`]) {
      try {
        total += statSync(file).size;
      } catch {
        // A missing WAL simply adds nothing.
      }
    }
    return total;
  }

  /**
   * Runs `hook` when this connection closes: a store's timer must not outlive it (a pending timer
   * keeps the closed connection, and every store over it, from being collected until it runs).
   */
  onClose(hook: () => void): void {
    this.closeHooks.push(hook);
  }

  /**
   * Closes the connection; the background checkpointer lets go of the file first. `reason`, when
   * given, is what any later use of this handle (or of a statement prepared on it) fails with.
   */
  close(reason?: string): void {
    if (this.handOffTicket !== undefined) {
      this.finishClose();
      return;
    }
    if (!this.driver.open) return;
    this.closedReason = reason;
    for (const hook of this.closeHooks.splice(0)) hook();
    this.closeConnection();
  }

  /**
   * Starts a close whose cost stays off the caller: from now on every use is refused (`E_CLOSED`
   * with `reason`, as after `close`), but the connection itself closes only once the checkpointer
   * thread holds one of its own to the file (`closeIfHandedOff`), so that SQLite's checkpoint at
   * the file's last close (the WAL copied back, two fsyncs: about a millisecond) runs on that
   * thread. Closes at once, returning false, when the thread cannot take it (none, a transaction
   * open, another connection of this process on the file).
   */
  beginClose(reason?: string): boolean {
    if (!this.driver.open) return false;
    const driver = this.driver;
    const ticket =
      driver.retire === undefined || driver.inTransaction ? undefined : this.signal?.handOff();
    if (ticket === undefined || driver.retire === undefined) {
      this.close(reason);
      return false;
    }
    this.closedReason = reason;
    for (const hook of this.closeHooks.splice(0)) hook();
    driver.retire(reason);
    this.handOffTicket = ticket;
    return true;
  }

  /** Closes a connection `beginClose` left open once the thread holds the file; true when closed. */
  closeIfHandedOff(): boolean {
    const ticket = this.handOffTicket;
    if (ticket === undefined) return true;
    if (!processCheckpointer().adopted(ticket)) return false;
    this.finishClose();
    return true;
  }

  private finishClose(): void {
    this.handOffTicket = undefined;
    this.closeConnection();
  }

  private closeConnection(): void {
    const signal = this.signal;
    this.signal = null;
    const closed = signal?.close();
    this.driver.close(this.closedReason);
    closed?.();
  }

  get inTransaction(): boolean {
    return this.driver.open && this.driver.inTransaction;
  }

  private assertOpen(): void {
    if (!this.driver.open) throw closedError(this.path, this.closedReason);
  }
}

function validateOpenOptions(options: OpenDatabaseOptions): void {
  rejectUnknownOptions(options, OPEN_OPTION_KEYS, "openDatabase");
  if (typeof options.path !== "string" || options.path === "") {
    throw new TypeError("Expected openDatabase({ path }) to be a non-empty string");
  }
  if (!DATABASE_ROLES.includes(options.role)) {
    throw new TypeError(
      `Expected openDatabase({ role }) to be one of ${DATABASE_ROLES.join(", ")}`,
    );
  }
}

function openReadonly(
  path: string,
  role: DatabaseRole,
  exists: boolean,
  factory: DriverFactory,
): Database {
  if (!exists) throw new StateError("E_NOT_FOUND", `no database at ${path}`, { details: { path } });
  // query_only refuses every write. The handle itself stays read-write (SQLite falls back to
  // read-only for a write-protected file): a read-only handle cannot checkpoint, so closing the
  // last connection would leave the -wal and -shm files it created beside the database.
  const driver = factory(path, { fileMustExist: true });
  try {
    driver.exec("PRAGMA query_only = ON");
    driver.exec("PRAGMA busy_timeout = 30000");
    const version = driver.prepare<{ user_version: number }>("PRAGMA user_version").get();
    const current = version?.user_version ?? 0;
    return new Database(driver, role, { from: current, to: current, applied: [] });
  } catch (error) {
    driver.close();
    throw error;
  }
}

/**
 * Opens (or creates) a database of a role: checks the file is SQLite and not newer than this
 * release before SQLite touches it, creates directories 0700 and files 0600, sets the connection
 * pragmas and applies pending schema migrations.
 */
export function openDatabase(options: OpenDatabaseOptions): Database {
  validateOpenOptions(options);
  const path = resolve(options.path);
  const mode = resolveJournalMode(options.journalMode);
  const checkpoints = resolveCheckpoints(options.checkpoints);
  assertNotDamaged(path);
  if (mode === "wal") assertWalSafe(dirname(path), filesystemTypeOf(dirname(path)));
  // The header is read with Node's fs: its close must not drop a connection's locks on the file.
  processCheckpointer().settle(path);
  const probe = probeDatabaseFile(path);
  const supported = latestSchemaVersion(options.role);
  if (probe.headerUserVersion > supported) {
    throw new StateError(
      "E_SCHEMA_TOO_NEW",
      `database ${path} has schema version ${probe.headerUserVersion}, newer than this agentstate supports (${supported}); upgrade agentstate to open it (the file was left untouched)`,
      { details: { path, found: probe.headerUserVersion, supported } },
    );
  }
  const factory =
    typeof options.driver === "function"
      ? options.driver
      : driverFactory(chooseDriver(options.driver));
  if (options.readonly) return openReadonly(path, options.role, probe.exists, factory);
  if (!probe.exists) {
    if (options.create === false) {
      throw new StateError("E_NOT_FOUND", `no database at ${path}`, { details: { path } });
    }
    ensurePrivateDir(dirname(path));
    createDatabaseFile(path, options.role, factory, mode);
  }
  const driver = factory(path, { fileMustExist: true });
  try {
    const migration = prepareConnection(
      driver,
      options.role,
      mode,
      probe,
      options.onUpgradeProgress,
    );
    // The thread opens its own connection by engine name: a caller's own factory stays inline.
    const background =
      checkpoints === "background" &&
      mode === "wal" &&
      typeof options.driver !== "function" &&
      processCheckpointer().available;
    if (background) driver.exec("PRAGMA wal_autocheckpoint = 0");
    return new Database(driver, options.role, migration, { backgroundCheckpoints: background });
  } catch (error) {
    driver.close();
    throw error;
  }
}
