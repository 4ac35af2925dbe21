// Free pages: what a database holds on its freelist, and giving them back to the filesystem.
import type { SqlStatement } from "./driver.js";

/** `PRAGMA auto_vacuum`: 0 none, 1 full, 2 incremental. */
export type AutoVacuum = "none" | "full" | "incremental";

const AUTO_VACUUM_NAMES: readonly AutoVacuum[] = ["none", "full", "incremental"];

/** The calls these need of a connection: a `Database` or a bare driver. */
export interface Connection {
  prepare<Row = Record<string, unknown>>(sql: string): SqlStatement<Row>;
  exec(sql: string): void;
}

export interface FreeSpace {
  autoVacuum: AutoVacuum;
  pageSize: number;
  /** Pages on the freelist: in the file, holding no data. */
  freePages: number;
  freeBytes: number;
}

/**
 * Pages one background step moves to the end of the file and cuts off (1 MiB of 4 KiB pages):
 * the step holds the write lock for a few milliseconds, so a writer that arrives meanwhile waits
 * no longer than that.
 */
export const VACUUM_STEP_PAGES = 256;

/** The thread starts giving free pages back only past this much free space. */
export const VACUUM_FROM_BYTES = 1024 * 1024;

function pragmaNumber(conn: Connection, name: string): number {
  const row = conn.prepare(`PRAGMA ${name}`).get();
  return Number(row === undefined ? 0 : Object.values(row)[0]);
}

export function readFreeSpace(conn: Connection): FreeSpace {
  const mode = pragmaNumber(conn, "auto_vacuum");
  const pageSize = pragmaNumber(conn, "page_size");
  const freePages = pragmaNumber(conn, "freelist_count");
  return {
    autoVacuum: AUTO_VACUUM_NAMES[mode] ?? "none",
    pageSize,
    freePages,
    freeBytes: freePages * pageSize,
  };
}

/**
 * Moves at most `pages` free pages to the end of the file and truncates them (in WAL mode, the
 * file shrinks when a checkpoint copies that commit back). Only an incremental database has the
 * pointer map this needs; on any other it does nothing.
 */
export function incrementalVacuumStep(conn: Connection, pages: number): void {
  if (!Number.isSafeInteger(pages) || pages < 1) {
    throw new TypeError(`Expected a positive whole number of pages, got ${pages}`);
  }
  // exec, not a prepared statement: the pragma yields a row per page freed, and a statement's
  // run() steps only once (better-sqlite3 then frees one page).
  conn.exec(`PRAGMA incremental_vacuum(${pages})`);
}
