// The operator's vacuum: a database switched to incremental auto-vacuum, its free pages given back.
import type { Database } from "./database.js";
import {
  type AutoVacuum,
  incrementalVacuumStep,
  readFreeSpace,
  VACUUM_STEP_PAGES,
} from "./free-pages.js";
import { mergeFtsIndexes } from "./fts-merge.js";

export interface VacuumResult {
  /** The mode before; `incremental` after every vacuum. */
  autoVacuumBefore: AutoVacuum;
  autoVacuum: AutoVacuum;
  /** Whether the whole file was rewritten (`VACUUM`): only to switch the mode. */
  rewritten: boolean;
  /** Merge steps that packed the full-text indexes first (the space of their deleted rows). */
  ftsMergeSteps: number;
  /** Free pages before, and bytes of the file and its WAL before and after. */
  freePagesBefore: number;
  bytesBefore: number;
  bytesAfter: number;
  ms: number;
}

/**
 * Gives a database's free space back to the filesystem. A database created before incremental
 * auto-vacuum (mode `none`) is switched to it: the mode takes effect only through a full `VACUUM`,
 * which rewrites the file in one transaction (a process killed during it leaves the old file, the
 * uncommitted rewrite is discarded on the next open) and holds the write lock throughout. An
 * incremental one gives back its free pages in steps of `VACUUM_STEP_PAGES`, each its own short
 * transaction, so writers of other processes get in between. Then a TRUNCATE checkpoint puts the
 * result into the database file and empties the WAL. Before either, the full-text indexes are
 * merged in short steps (src/db/fts-merge.ts): the postings of deleted rows are freed only so.
 */
export function vacuumDatabase(db: Database, now: () => number = Date.now): VacuumResult {
  if (db.inTransaction) throw new TypeError("Expected vacuumDatabase() outside a transaction");
  const started = now();
  const before = readFreeSpace(db);
  const bytesBefore = db.sizeBytes();
  const rewritten = before.autoVacuum !== "incremental";
  const ftsMergeSteps = mergeFtsIndexes(db);
  if (rewritten) {
    db.exec("PRAGMA auto_vacuum = INCREMENTAL");
    db.exec("VACUUM");
  } else {
    giveBackAll(db);
  }
  db.checkpoint("TRUNCATE");
  return {
    autoVacuumBefore: before.autoVacuum,
    autoVacuum: readFreeSpace(db).autoVacuum,
    rewritten,
    ftsMergeSteps,
    freePagesBefore: before.freePages,
    bytesBefore,
    bytesAfter: db.sizeBytes(),
    ms: now() - started,
  };
}

function giveBackAll(db: Database): void {
  let left = readFreeSpace(db).freePages;
  while (left > 0) {
    incrementalVacuumStep(db, VACUUM_STEP_PAGES);
    const now = readFreeSpace(db).freePages;
    if (now >= left) return; // Another process freeing pages as fast: what is left waits.
    left = now;
  }
}
