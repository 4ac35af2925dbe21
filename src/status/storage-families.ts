import type { DriverName } from "../db/driver.js";
import { driverFactory } from "../db/driver-choice.js";
import { type Connection, readFreeSpace } from "../db/free-pages.js";

/** What the bytes of an agent database hold, by table family. */
export const STORAGE_FAMILIES = ["events", "blobs", "vfs", "fts", "other"] as const;
export type StorageFamily = (typeof STORAGE_FAMILIES)[number];

/**
 * `dbstat`: bytes of each table and its indexes, page by page (both engines agentstate runs on
 * are built with it). `page_count`: an engine without it; the file is then one `other` figure.
 */
export type StorageSource = "dbstat" | "page_count";

export interface StorageBreakdown {
  source: StorageSource;
  /** page_count × page_size: the main file, without its WAL. */
  fileBytes: number;
  /** Pages on the freelist: in the file, holding nothing. */
  freeBytes: number;
  /** Bytes per family; with `freeBytes` they add up to `fileBytes`. */
  families: Record<StorageFamily, number>;
}

const FAMILY_OF_TABLE: Readonly<Record<string, StorageFamily>> = {
  transcript_events: "events",
  transcript_snapshots: "events",
  // Left by an upgrade of the transcript layout until its copy finishes.
  transcript_events_v6: "events",
  transcript_identities_v6: "events",
  transcript_blobs: "blobs",
  transcript_blob_refs: "blobs",
  transcript_blob_refs_v6: "blobs",
  tool_artifacts: "blobs",
  run_artifacts: "blobs",
  vfs_entries: "vfs",
  vfs_chunks: "vfs",
  search_index_state: "fts",
};

function familyOf(table: string, virtualTables: readonly string[]): StorageFamily {
  const known = FAMILY_OF_TABLE[table];
  if (known !== undefined) return known;
  // An FTS5 table keeps its index in shadow tables named after it (`transcript_fts_data`, …).
  if (virtualTables.some((v) => table === v || table.startsWith(`${v}_`))) return "fts";
  return "other";
}

function bytesPerTable(db: Connection): { table: string; bytes: number }[] | null {
  try {
    // Aggregate mode: one row per B-tree; an index is counted with the table it indexes.
    return db
      .prepare<{ table: string; bytes: number }>(
        `SELECT coalesce(s.tbl_name, d.name) AS "table", sum(d.pgsize) AS bytes
         FROM dbstat('main', 1) AS d LEFT JOIN sqlite_schema AS s ON s.name = d.name
         GROUP BY 1`,
      )
      .all();
  } catch (error) {
    if (error instanceof Error && /no such table: dbstat/i.test(error.message)) return null;
    throw error;
  }
}

/** How an agent database's file is spent: events, blobs, VFS, the search index, the rest. */
export function storageBreakdown(db: Connection): StorageBreakdown {
  const { pageSize, freeBytes } = readFreeSpace(db);
  const pages = Number(
    db.prepare<{ n: number }>("SELECT page_count AS n FROM pragma_page_count()").get()?.n ?? 0,
  );
  const fileBytes = pages * pageSize;
  const families: Record<StorageFamily, number> = { events: 0, blobs: 0, vfs: 0, fts: 0, other: 0 };
  const tables = bytesPerTable(db);
  if (tables === null) {
    families.other = fileBytes - freeBytes;
    return { source: "page_count", fileBytes, freeBytes, families };
  }
  const virtualTables = db
    .prepare<{ name: string }>(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'",
    )
    .all()
    .map((row) => row.name);
  for (const { table, bytes } of tables) families[familyOf(table, virtualTables)] += bytes;
  // dbstat leaves out pointer-map pages and the lock-byte page: counted as `other`, so the
  // families and the freelist account for the whole file.
  const counted = STORAGE_FAMILIES.reduce((sum, f) => sum + families[f], 0);
  families.other += Math.max(0, fileBytes - freeBytes - counted);
  return { source: "dbstat", fileBytes, freeBytes, families };
}

/**
 * The breakdown of the database at `path` on a read-only connection of its own (what the storage
 * thread runs): it sees every commit, whoever made it, up to the moment it starts.
 */
export function measureStorageFile(path: string, driver: DriverName): StorageBreakdown {
  const db = driverFactory(driver)(path, { readonly: true, fileMustExist: true });
  try {
    db.exec("PRAGMA busy_timeout = 30000");
    return storageBreakdown(db);
  } finally {
    db.close();
  }
}
