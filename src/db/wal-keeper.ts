import { statSync } from "node:fs";
import type { CheckpointRow } from "./checkpointer-protocol.js";
import type { DriverFactory, SqlDriver, SqlStatement } from "./driver.js";
import { isStateError } from "./errors.js";
import {
  incrementalVacuumStep,
  readFreeSpace,
  VACUUM_FROM_BYTES,
  VACUUM_STEP_PAGES,
} from "./free-pages.js";

/**
 * A -wal file larger than this is truncated once its writer is quiet (every frame copied). While
 * the writer writes, the writer itself keeps the WAL bounded (wal-signal.ts).
 */
export const RESTART_FROM_BYTES = 16 * 1024 * 1024;

/**
 * How long the writer must have announced no new frames before the thread truncates its file:
 * a truncation takes the write lock, and a writer that waits for it sleeps in SQLite's busy
 * handler for whole milliseconds. Writers announce every 20 ms while they write (wal-signal.ts).
 */
const QUIET_MS = 100;

/**
 * A refused truncation (a new write came in, or a reader holds its snapshot) is retried at once
 * the first few times, then after a doubling pause from 250 ms up to 2 s: each attempt holds
 * writers up for at most `CATCH_UP_BUSY_MS`.
 */
function retryDelayMs(refusals: number): number {
  return refusals <= 3 ? 0 : Math.min(2000, 250 * 2 ** (refusals - 4));
}

/**
 * How long a truncation waits for the write lock, then for readers to leave the WAL. It holds the
 * write lock while it waits for readers, so this is also the longest a writer can be held up.
 */
const CATCH_UP_BUSY_MS = 20;

/**
 * Refused vacuum steps (another process writing) after which the thread stops holding the
 * connection open for them: the next burst of writes brings it back, and `agentstate gc` gives
 * back whatever is left.
 */
const MAX_VACUUM_REFUSALS = 8;

/**
 * What a round needs of a kept database. Prepared at its first round, not when the thread takes
 * the file: a checkpoint pragma makes SQLite parse the whole schema (about half a millisecond for
 * an agent database), and a file handed off at an eviction is usually let go before any round.
 */
interface KeptStatements {
  readonly passive: SqlStatement<CheckpointRow>;
  readonly truncate: SqlStatement<CheckpointRow>;
  /** Only an incremental database can give its free pages back in steps. */
  readonly incremental: boolean;
  readonly pageSize: number;
  readonly freePages: SqlStatement<{ freelist_count: number }>;
}

interface Kept {
  readonly driver: SqlDriver;
  statements: KeptStatements | undefined;
  activeAt: number;
  restartAfter: number;
  refusals: number;
  vacuumAfter: number;
  vacuumRefusals: number;
}

function prepareStatements(driver: SqlDriver): KeptStatements {
  const space = readFreeSpace(driver);
  const checkpoint = (mode: string) =>
    driver.prepare<CheckpointRow>(`PRAGMA wal_checkpoint(${mode})`);
  return {
    passive: checkpoint("PASSIVE"),
    truncate: checkpoint("TRUNCATE"),
    incremental: space.autoVacuum === "incremental",
    pageSize: space.pageSize,
    freePages: driver.prepare("PRAGMA freelist_count"),
  };
}

/**
 * Connections the thread holds at most (each costs 2 file descriptors: the database and its
 * -wal; the -shm is shared with the writer's). Past it the least recently written database is let
 * go: its writer's own catch-up (wal-signal.ts) and its close still bound its WAL. Without a bound
 * a process writing to every agent of a full pool held twice the pool's descriptors again.
 */
export const MAX_KEPT_CONNECTIONS = 6;

export interface WalKeeperOptions {
  /** A connection unused for this long, with its WAL fully checkpointed, is closed. */
  idleMs?: number;
  restartFromBytes?: number;
  /** Free pages are given back once the freelist holds more than this. */
  vacuumFromBytes?: number;
  /** Free pages given back per step (one short write transaction). */
  vacuumStepPages?: number;
  /** See MAX_KEPT_CONNECTIONS. */
  maxKept?: number;
}

function walFileBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

/**
 * Keeps the WAL of the databases it is told about small: a connection of its own to each one
 * written recently, a PASSIVE checkpoint on every `tick`, and a TRUNCATE of a file grown past the
 * bound once its writer is quiet. Runs on the checkpointer thread; it has no other state than its
 * connections.
 */
export class WalKeeper {
  private readonly kept = new Map<string, Kept>();
  private readonly idleMs: number;
  private readonly restartFrom: number;
  private readonly vacuumFrom: number;
  private readonly stepPages: number;
  private readonly maxKept: number;

  constructor(options: WalKeeperOptions = {}) {
    this.idleMs = options.idleMs ?? 3000;
    this.restartFrom = options.restartFromBytes ?? RESTART_FROM_BYTES;
    this.vacuumFrom = options.vacuumFromBytes ?? VACUUM_FROM_BYTES;
    this.stepPages = options.vacuumStepPages ?? VACUUM_STEP_PAGES;
    this.maxKept = options.maxKept ?? MAX_KEPT_CONNECTIONS;
  }

  /** Databases it holds a connection to. */
  get size(): number {
    return this.kept.size;
  }

  /** `path` has new frames: keep a connection to it until it has been quiet for `idleMs`. */
  activate(path: string, factory: DriverFactory, now: number): void {
    const found = this.kept.get(path);
    if (found) {
      found.activeAt = now;
      return;
    }
    this.makeRoom();
    const driver = factory(path, { fileMustExist: true });
    try {
      // Also the longest a vacuum step waits for the write lock: it must never stall.
      driver.exec(`PRAGMA busy_timeout = ${CATCH_UP_BUSY_MS}`);
      // A first read opens the WAL and takes the shared lock a WAL connection keeps: from now on
      // the writer's close is not the file's last. The header cookie needs no schema.
      driver.prepare("PRAGMA user_version").get();
      this.kept.set(path, {
        driver,
        statements: undefined,
        activeAt: now,
        restartAfter: 0,
        refusals: 0,
        vacuumAfter: 0,
        vacuumRefusals: 0,
      });
    } catch (error) {
      driver.close();
      throw error;
    }
  }

  /** At the bound, lets go of the database written least recently. */
  private makeRoom(): void {
    if (this.kept.size < this.maxKept) return;
    let oldest: string | undefined;
    let oldestAt = Number.POSITIVE_INFINITY;
    for (const [path, kept] of this.kept) {
      if (kept.activeAt < oldestAt) [oldest, oldestAt] = [path, kept.activeAt];
    }
    if (oldest !== undefined) this.drop(oldest);
  }

  /** Closes the connection to `path`, if any: the caller's own close must be the last one. */
  drop(path: string): void {
    const found = this.kept.get(path);
    if (!found) return;
    this.kept.delete(path);
    found.driver.close();
  }

  /** One round over every kept database. A database that fails is let go, not retried. */
  tick(now: number): void {
    for (const [path, kept] of this.kept) {
      try {
        if (this.keep(path, kept, now)) this.drop(path);
      } catch {
        this.drop(path);
      }
    }
  }

  dropAll(): void {
    for (const path of [...this.kept.keys()]) this.drop(path);
  }

  /**
   * Checkpoints one database; true when its connection can be closed. While its writer is busy
   * only PASSIVE: a RESTART must take the write lock, which a writer in a tight loop retakes
   * between the busy handler's polls, and while it waits it holds the checkpoint lock that the
   * writer's own catch-up (wal-signal.ts) needs. So the writer restarts the WAL itself, between
   * its transactions, with only the frames since the last pass here left to copy; this thread
   * cuts a grown file back once the writer has gone quiet, and gives free pages back after that.
   */
  private keep(path: string, kept: Kept, now: number): boolean {
    kept.statements ??= prepareStatements(kept.driver);
    const statements = kept.statements;
    const passive = statements.passive.get();
    const caughtUp =
      passive !== undefined && passive.busy === 0 && passive.log === passive.checkpointed;
    const quiet = now - kept.activeAt >= QUIET_MS;
    if (caughtUp && quiet && walFileBytes(path) > this.restartFrom && now >= kept.restartAfter) {
      const cut = statements.truncate.get();
      kept.refusals = cut?.busy === 0 ? 0 : kept.refusals + 1;
      kept.restartAfter = now + retryDelayMs(kept.refusals);
      return false;
    }
    if (caughtUp && quiet && this.vacuumOwed(kept, statements)) {
      if (now >= kept.vacuumAfter) this.vacuumStep(kept, now);
      return false;
    }
    return caughtUp && now - kept.activeAt > this.idleMs;
  }

  /** Whether the freelist is worth a step, and steps are not being refused over and over. */
  private vacuumOwed(kept: Kept, statements: KeptStatements): boolean {
    if (!statements.incremental || kept.vacuumRefusals >= MAX_VACUUM_REFUSALS) return false;
    const free = statements.freePages.get()?.freelist_count ?? 0;
    return free * statements.pageSize > this.vacuumFrom;
  }

  /**
   * One bounded step, between the writer's transactions: the writer waits at most the step's
   * few milliseconds for the lock, and this connection waits at most `CATCH_UP_BUSY_MS` for it.
   * The next round's PASSIVE checkpoint copies the step back, and SQLite cuts the database file
   * to its new size once every frame is copied.
   */
  private vacuumStep(kept: Kept, now: number): void {
    try {
      incrementalVacuumStep(kept.driver, this.stepPages);
      kept.vacuumRefusals = 0;
    } catch (error) {
      if (!isStateError(error, "E_BUSY")) throw error;
      kept.vacuumRefusals++;
      kept.vacuumAfter = now + retryDelayMs(kept.vacuumRefusals);
    }
  }
}
