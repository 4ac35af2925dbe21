import { statSync } from "node:fs";
import type { StorageBreakdown } from "./storage-families.js";

/**
 * A file's state as the filesystem tells it: inode, size and modification time (ns). A commit
 * changes the WAL's, a checkpoint the database's, a restore the inode.
 */
function stampOf(path: string): string {
  const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
  return stat === undefined ? "-" : `${stat.ino}:${stat.size}:${stat.mtimeNs}`;
}

function stampsOf(dbPath: string): string {
  return `${stampOf(dbPath)}|${stampOf(`${dbPath}-wal`)}`;
}

/**
 * Kernels stamp mtimes from a coarse clock (a few ms), so a write just after a measurement
 * started can leave the stamps as they were: a file modified this close to the start is not
 * trusted, and the next ask measures again (as git treats "racy" files).
 */
const RACY_MS = 100;

function settledBefore(dbPath: string, startedAt: number): boolean {
  for (const path of [dbPath, `${dbPath}-wal`]) {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat !== undefined && stat.mtimeMs >= startedAt - RACY_MS) return false;
  }
  return true;
}

interface Entry {
  stamp: string;
  trusted: boolean;
  breakdown: StorageBreakdown;
  measuredAt: number;
}

export interface CachedStorage {
  breakdown: StorageBreakdown;
  /** Unix ms when the measurement that gave it started. */
  measuredAt: number;
  /** True when the database changed since: a new measurement is under way. */
  stale: boolean;
}

/**
 * Storage breakdowns by database path. `dbstat` reads every page of the file (64 ms on 78 MB,
 * about a second on a million-event agent), so an answer is kept while the database and its WAL
 * are unchanged on disk. After a commit (by any process) the kept answer is served marked
 * `stale` while a new measurement runs off the request path; only a database never measured
 * waits for its first.
 */
export class StorageCache {
  private readonly entries = new Map<string, Entry>();
  private readonly running = new Map<string, Promise<Entry>>();

  constructor(private readonly measure: (dbPath: string) => Promise<StorageBreakdown>) {}

  async get(dbPath: string): Promise<CachedStorage> {
    const stamp = stampsOf(dbPath);
    const found = this.entries.get(dbPath);
    if (found?.trusted && found.stamp === stamp) return answer(found, false);
    const refresh = this.refresh(dbPath, stamp);
    if (found === undefined) return answer(await refresh, false);
    // Whoever asks next gets the new answer; a failure leaves the old one to be tried again.
    refresh.catch(() => {});
    return answer(found, true);
  }

  /** Starts measuring databases not measured yet (a server's start), without waiting. */
  warm(dbPaths: readonly string[]): void {
    for (const path of dbPaths) {
      if (!this.entries.has(path)) this.refresh(path, stampsOf(path)).catch(() => {});
    }
  }

  private refresh(dbPath: string, stamp: string): Promise<Entry> {
    const running = this.running.get(dbPath);
    if (running !== undefined) return running;
    const measuredAt = Date.now();
    const done = this.measure(dbPath)
      .then((breakdown) => {
        const trusted = settledBefore(dbPath, measuredAt);
        const entry = { stamp, trusted, breakdown, measuredAt };
        this.entries.set(dbPath, entry);
        return entry;
      })
      .finally(() => this.running.delete(dbPath));
    this.running.set(dbPath, done);
    return done;
  }
}

function answer(entry: Entry, stale: boolean): CachedStorage {
  return { breakdown: entry.breakdown, measuredAt: entry.measuredAt, stale };
}
