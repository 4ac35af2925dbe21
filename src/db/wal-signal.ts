import { statSync } from "node:fs";
import type { Checkpointer } from "./checkpointer.js";
import { JOURNAL_SIZE_LIMIT } from "./checkpoints.js";
import type { DriverName, SqlStatement } from "./driver.js";

/** A database tells the thread about new frames at most this often, never per commit. */
const ANNOUNCE_MS = 20;

/**
 * Past this -wal size the writer starts the WAL over itself, between its transactions. Under a
 * continuous writer nothing else can: the thread's PASSIVE rounds never catch up (each stops at
 * the frames that existed when it started, and SQLite restarts the WAL only after one that did),
 * and a RESTART from the thread needs the write lock, which a writer in a tight loop takes back
 * between the busy handler's polls. The thread's rounds leave only the last few milliseconds of
 * frames for this catch-up to copy. bench/wal.mjs and the benches report `callerCatchUps`.
 */
export const CALLER_CATCH_UP_BYTES = 24 * 1024 * 1024;

/**
 * After a catch-up that could not restart the WAL, how much it must grow before the next (never
 * past PATIENT_CATCH_UP_BYTES).
 */
const RETRY_GROWTH_BYTES = 4 * 1024 * 1024;

/**
 * Past this -wal size a catch-up waits out the thread's round in progress, and one that is
 * refused is tried again at the next look, not RETRY_GROWTH_BYTES later. Below it both give up
 * quickly, and under load they gave up at every look: a round slowed by a busy disk outlasted
 * the 5 ms wait look after look, another process's checkpoint refused every try and each refusal
 * put the next try 4 MiB further, and the WAL passed JOURNAL_SIZE_LIMIT (71 to 85 MB on a loaded
 * machine, 187 MB once). The margin is a few times what a writer in a tight loop adds between two
 * looks at the file (about 5 MiB).
 */
export const PATIENT_CATCH_UP_BYTES = JOURNAL_SIZE_LIMIT - 16 * 1024 * 1024;

/**
 * What a catch-up did: `owed` when the caller was inside a transaction (run it after the commit),
 * `restarted` when the WAL starts over at the beginning of its file, `refused` when a reader or
 * another process was in the way.
 */
export type CatchUpResult = "owed" | "restarted" | "refused";

/** The longest a writer waits for the thread's round in progress before its own catch-up. */
const CATCH_UP_WAIT_MS = 5;

/**
 * The same past PATIENT_CATCH_UP_BYTES. A round always ends, and it copies frames the catch-up
 * would copy anyway; one that outlasts even this (a slow fsync) is waited for again at the next
 * look, the writer adding only what it writes in between.
 */
const ROUND_WAIT_MS = 1000;

/** Checkpoints the backstop ran on callers' threads, for the benchmark and diagnostics. */
export const callerCatchUps = { count: 0, longestMs: 0 };

export interface WalSignalHooks {
  /** The thread cannot serve any more: back to SQLite's own auto-checkpoint. */
  fallback: () => void;
  /**
   * Checkpoints on the caller's connection and starts the WAL over; `patient`: waits much longer
   * for readers and for another connection's checkpoint before it gives up.
   */
  catchUp: (patient: boolean) => CatchUpResult;
  /**
   * Whether the caller is inside a transaction: the catch-up is owed until the commit, and
   * waiting for the thread meanwhile would hold the write lock for nothing.
   */
  inTransaction: () => boolean;
}

/**
 * One database's link to the checkpointer: notes writes (a clock read each) and announces them at
 * most every `ANNOUNCE_MS`. A burst is announced from the write path when it lasts, else by a
 * timer once it ends; a tight synchronous loop never lets the timer run, hence both.
 */
export class WalSignal {
  private since = 0;
  private timer: NodeJS.Timeout | null = null;
  /** A catch-up the thread's round held off, tried again after ANNOUNCE_MS. */
  private retry: NodeJS.Timeout | null = null;
  /** A backstop catch-up found the caller inside a transaction: run it after the commit. */
  private owed = false;
  /**
   * The -wal size that calls for the next catch-up. A restarted WAL reuses its file from the
   * start, so the file grows again only once the frames in use pass its size: that growth is
   * the signal. A file that shrank (the thread truncated it when the writer went quiet) starts
   * over at CALLER_CATCH_UP_BYTES.
   */
  private nextAt = CALLER_CATCH_UP_BYTES;
  /**
   * The -wal size that calls for the next patient catch-up. A reader that keeps its snapshot for
   * long refuses every catch-up however long it waits: the writer waits for it once per
   * RETRY_GROWTH_BYTES of growth, and in between tries only the cheap way.
   */
  private patientAt = PATIENT_CATCH_UP_BYTES;
  private lastSize = 0;
  /** Announced at least once: see `Database.checkpointerServed`. */
  announced = false;

  constructor(
    private readonly checkpointer: Checkpointer,
    private readonly path: string,
    private readonly driver: DriverName,
    private readonly hooks: WalSignalHooks,
  ) {
    checkpointer.attach(path, hooks.fallback);
  }

  wrote(): void {
    const now = Date.now();
    if (this.since === 0) {
      this.since = now;
      this.timer ??= setTimeout(this.onTimer, ANNOUNCE_MS).unref();
    } else if (now - this.since >= ANNOUNCE_MS) this.flush();
  }

  private readonly onRetry = (): void => {
    this.retry = null;
    this.guard();
  };

  private readonly onTimer = (): void => {
    this.timer = null;
    this.flush();
  };

  private flush(): void {
    if (this.since === 0) return;
    this.since = 0;
    this.announced = true;
    this.checkpointer.announce(this.path, this.driver);
    this.guard();
  }

  /** The caller's transaction committed. */
  committed(): void {
    if (this.owed) this.guard();
  }

  private guard(): void {
    // The file's size, never its contents: opening and closing the -shm (or the database) from
    // here would drop SQLite's POSIX locks on it for the whole process.
    const size = walBytes(this.path);
    if (size < this.lastSize) this.startOver();
    this.lastSize = size;
    this.owed = false;
    if (size < this.nextAt) {
      this.checkpointer.letGo(this); // A deferred catch-up that is no longer needed.
      return;
    }
    if (this.hooks.inTransaction()) {
      this.owed = true;
      return;
    }
    const started = performance.now();
    const patient = size >= this.patientAt;
    const wait = size >= PATIENT_CATCH_UP_BYTES ? ROUND_WAIT_MS : CATCH_UP_WAIT_MS;
    const done = this.checkpointer.whileHeld(this, wait, () => this.hooks.catchUp(patient));
    if (done === undefined) {
      // The thread's round outlasted the wait; its hold stays raised until this retry.
      this.retry ??= setTimeout(this.onRetry, ANNOUNCE_MS).unref();
      return;
    }
    if (done === "owed") {
      this.owed = true;
      return;
    }
    const after = walBytes(this.path);
    this.lastSize = after;
    if (done === "restarted") this.patientAt = PATIENT_CATCH_UP_BYTES;
    else if (patient) this.patientAt = after + RETRY_GROWTH_BYTES;
    const next = done === "restarted" ? after + 1 : after + RETRY_GROWTH_BYTES;
    this.nextAt = Math.min(PATIENT_CATCH_UP_BYTES, Math.max(CALLER_CATCH_UP_BYTES, next));
    const ms = performance.now() - started;
    callerCatchUps.count++;
    callerCatchUps.longestMs = Math.max(callerCatchUps.longestMs, ms);
  }

  private startOver(): void {
    this.nextAt = CALLER_CATCH_UP_BYTES;
    this.patientAt = PATIENT_CATCH_UP_BYTES;
  }

  /** See `Checkpointer.handOff`: the ticket to wait for before closing, if the thread takes it. */
  handOff(): number | undefined {
    return this.checkpointer.handOff(this.path, this.driver);
  }

  /** Returns what to call once the connection is closed, if anything (see `Checkpointer.detach`). */
  close(): (() => void) | undefined {
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.retry !== null) clearTimeout(this.retry);
    this.timer = null;
    this.retry = null;
    this.checkpointer.letGo(this);
    this.since = 0;
    return this.checkpointer.detach(this.path, this.hooks.fallback);
  }
}

function walBytes(path: string): number {
  return statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
}

/** Statements that cannot add WAL frames (a SELECT, a pragma read) are not watched. */
const READ_ONLY_SQL = /^\s*(select|pragma|explain)\b/i;

/** Whether `sql` is a statement that cannot write (so it needs no watching). */
export function isReadOnlySql(sql: string): boolean {
  return READ_ONLY_SQL.test(sql);
}

/** The statement, telling `signal` after each call that it may have written. */
export function signalling<Row>(
  statement: SqlStatement<Row>,
  signal: WalSignal,
): SqlStatement<Row> {
  return {
    run: (...params) => {
      const result = statement.run(...params);
      signal.wrote();
      return result;
    },
    get: (...params) => {
      const row = statement.get(...params);
      signal.wrote();
      return row;
    },
    all: (...params) => {
      const rows = statement.all(...params);
      signal.wrote();
      return rows;
    },
    iterate: (...params) => {
      signal.wrote();
      return statement.iterate(...params);
    },
  };
}
