import { statSync } from "node:fs";
import type { CheckpointRow } from "./checkpointer-protocol.js";
import type { DriverFactory, SqlDriver, SqlStatement } from "./driver.js";

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

interface Kept {
  readonly driver: SqlDriver;
  readonly frameBytes: number;
  readonly passive: SqlStatement<CheckpointRow>;
  readonly truncate: SqlStatement<CheckpointRow>;
  activeAt: number;
  restartAfter: number;
  refusals: number;
}

export interface WalKeeperOptions {
  /** A connection unused for this long, with its WAL fully checkpointed, is closed. */
  idleMs?: number;
  restartFromBytes?: number;
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

  constructor(options: WalKeeperOptions = {}) {
    this.idleMs = options.idleMs ?? 3000;
    this.restartFrom = options.restartFromBytes ?? RESTART_FROM_BYTES;
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
    const driver = factory(path, { fileMustExist: true });
    try {
      driver.exec(`PRAGMA busy_timeout = ${CATCH_UP_BUSY_MS}`);
      const page = driver.prepare<{ page_size: number }>("PRAGMA page_size").get();
      const checkpoint = (mode: string) =>
        driver.prepare<CheckpointRow>(`PRAGMA wal_checkpoint(${mode})`);
      this.kept.set(path, {
        driver,
        frameBytes: (page?.page_size ?? 4096) + 24,
        passive: checkpoint("PASSIVE"),
        truncate: checkpoint("TRUNCATE"),
        activeAt: now,
        restartAfter: 0,
        refusals: 0,
      });
    } catch (error) {
      driver.close();
      throw error;
    }
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
   * cuts a grown file back once the writer has gone quiet.
   */
  private keep(path: string, kept: Kept, now: number): boolean {
    const passive = kept.passive.get();
    const caughtUp =
      passive !== undefined && passive.busy === 0 && passive.log === passive.checkpointed;
    const quiet = now - kept.activeAt >= QUIET_MS;
    if (caughtUp && quiet && walFileBytes(path) > this.restartFrom && now >= kept.restartAfter) {
      const cut = kept.truncate.get();
      kept.refusals = cut?.busy === 0 ? 0 : kept.refusals + 1;
      kept.restartAfter = now + retryDelayMs(kept.refusals);
      return false;
    }
    return caughtUp && now - kept.activeAt > this.idleMs;
  }
}
