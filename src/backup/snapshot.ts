import type { Database } from "../db/database.js";
import type { SqlDriver } from "../db/driver.js";
import { chooseDriver, driverFactory } from "../db/driver-choice.js";
import { ensurePrivateFile } from "../db/files.js";
import { sqlString } from "../db/sql-string.js";

function vacuumInto(target: string): string {
  return `VACUUM INTO ${sqlString(target)}`;
}

/**
 * Writes a compact, consistent copy of an open database to `target` with `VACUUM INTO`: one read
 * transaction, so writers in other connections keep going and the copy holds exactly what was
 * committed when it began. The checkpoint first moves the WAL into the main file (PASSIVE: it
 * never waits for readers or writers). The copy is created owner-only before SQLite fills it.
 *
 * `VACUUM INTO` writes with the connection's `synchronous` level, which for a home's connection
 * (NORMAL) means fsyncing the whole copy. The copy is a private temp file that lives only until it
 * is archived, and the archive is fsynced: syncing the copy too took a quarter of the snapshot's
 * time (on a 200 MB transcript database) and wrote all of it to disk for nothing. So OFF, for this
 * one statement: the pragma is per connection, nothing else runs on it meanwhile, and it does not
 * change how the source database is written.
 */
export function snapshotDatabase(db: Database, target: string): void {
  db.checkpoint("PASSIVE");
  ensurePrivateFile(target);
  const level = Number(db.pragma("synchronous"));
  db.exec("PRAGMA synchronous = OFF");
  try {
    db.exec(vacuumInto(target));
  } finally {
    db.exec(`PRAGMA synchronous = ${level}`);
  }
}

/**
 * Snapshots a SQLite file that is not one of the home's databases (a legacy sidecar, a plugin's
 * own database) through a read-only connection, so it is never migrated or otherwise changed.
 */
export function snapshotForeignDatabase(source: string, target: string): void {
  let driver: SqlDriver | undefined;
  try {
    driver = driverFactory(chooseDriver())(source, { readonly: true, fileMustExist: true });
    driver.exec("PRAGMA busy_timeout = 30000");
    // Not synced, as above; on this throwaway connection it needs no restoring.
    driver.exec("PRAGMA synchronous = OFF");
    ensurePrivateFile(target);
    driver.exec(vacuumInto(target));
  } finally {
    driver?.close();
  }
}

/** `agents` ids registered in a global database snapshot, read from the snapshot itself. */
export function registeredAgentIds(snapshot: string): string[] {
  const driver = driverFactory(chooseDriver())(snapshot, { readonly: true, fileMustExist: true });
  try {
    return driver
      .prepare<{ agent_id: string }>("SELECT agent_id FROM agents ORDER BY agent_id")
      .all()
      .map((row) => row.agent_id);
  } finally {
    driver.close();
  }
}
