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

/**
 * Kernels stamp mtimes from a coarse clock (a few ms), so a write just after a breakdown was
 * started can leave the stamps as they were: a file modified this close to the start of the
 * breakdown is not trusted, and the next request computes afresh (as git treats "racy" files).
 */
const RACY_MS = 100;

interface Entry {
  stamp: string;
  breakdown: StorageBreakdown;
}

/**
 * Storage breakdowns by database path, reused while the database and its WAL are unchanged on
 * disk. `dbstat` reads every page of the file (64 ms on 78 MB, about a second on a
 * million-event agent): a chart that asks again with nothing written gets the last answer; any
 * commit, by this process or another, changes the WAL's stamp and the next ask recomputes.
 */
export class StorageCache {
  private readonly entries = new Map<string, Entry>();

  get(dbPath: string, compute: () => StorageBreakdown): StorageBreakdown {
    const stamp = `${stampOf(dbPath)}|${stampOf(`${dbPath}-wal`)}`;
    const found = this.entries.get(dbPath);
    if (found?.stamp === stamp) return found.breakdown;
    const startedAt = Date.now();
    const breakdown = compute();
    if (this.settledBefore(dbPath, startedAt)) this.entries.set(dbPath, { stamp, breakdown });
    else this.entries.delete(dbPath);
    return breakdown;
  }

  /** True when neither file was modified within RACY_MS of `startedAt` (or since). */
  private settledBefore(dbPath: string, startedAt: number): boolean {
    for (const path of [dbPath, `${dbPath}-wal`]) {
      const stat = statSync(path, { throwIfNoEntry: false });
      if (stat !== undefined && stat.mtimeMs >= startedAt - RACY_MS) return false;
    }
    return true;
  }
}
