import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { markDamaged, readDamageMarker } from "../db/damage-marker.js";
import type { SqlDriver } from "../db/driver.js";
import { chooseDriver, driverFactory } from "../db/driver-choice.js";
import { isStateError } from "../db/errors.js";
import { probeDatabaseFile } from "../db/files.js";
import type { DatabaseRole } from "../db/schema.js";
import { agentDbRelativePath, GLOBAL_DB_RELATIVE_PATH } from "../home.js";

export interface DatabaseHealth {
  path: string;
  role: DatabaseRole;
  status: "ok" | "damaged";
  /** What `quick_check` (or opening the file) said; empty when ok. */
  problems: string[];
}

/** A database file of a home, found on disk; `agentId` is its folder's name for an agent's. */
export interface HomeDatabaseFile {
  path: string;
  role: DatabaseRole;
  agentId: string | null;
}

/**
 * The database files of a home, found on disk rather than through the registry: the global
 * database holding the registry may be the damaged one.
 */
export function homeDatabases(home: string): HomeDatabaseFile[] {
  const found: HomeDatabaseFile[] = [];
  const global = join(home, GLOBAL_DB_RELATIVE_PATH);
  if (existsSync(global)) found.push({ path: global, role: "global", agentId: null });
  let agents: string[] = [];
  try {
    agents = readdirSync(join(home, "agents")).sort();
  } catch {
    // No agents directory: no agent databases.
  }
  for (const agentId of agents) {
    let path: string;
    try {
      path = join(home, agentDbRelativePath(agentId));
    } catch {
      continue; // Not an agent id agentstate could have written.
    }
    if (existsSync(path)) found.push({ path, role: "agent", agentId });
  }
  return found;
}

/**
 * Runs `fn` on a connection to an existing database file that writes nothing: a writable handle
 * kept from writing by query_only, as read-only opens are (a read-only handle cannot remove the
 * -wal and -shm files it made when it closes). A file that is not SQLite fails before SQLite
 * reads it.
 */
export function readQuietly<T>(path: string, fn: (driver: SqlDriver) => T): T {
  probeDatabaseFile(path);
  const driver = driverFactory(chooseDriver())(path, { fileMustExist: true });
  try {
    driver.exec("PRAGMA query_only = ON");
    // A move or a commit of a live gateway holds its lock for a moment: wait, as every open does.
    driver.exec("PRAGMA busy_timeout = 30000");
    return fn(driver);
  } finally {
    driver.close();
  }
}

/** What a check on a file too damaged to be read says: SQLite's own words where it has them. */
export function damageOf(error: unknown): string | undefined {
  const damage = ["E_CORRUPT", "E_NOT_A_DATABASE", "E_IO"] as const;
  if (!damage.some((code) => isStateError(error, code))) return undefined;
  const cause = (error as Error).cause;
  return cause instanceof Error ? cause.message : (error as Error).message;
}

/** The lines of a check pragma; none when it says "ok". */
export function checkLines(driver: SqlDriver, pragma: "quick_check" | "integrity_check"): string[] {
  const rows = driver.prepare<Record<string, string>>(`PRAGMA ${pragma}`).all();
  const lines = rows.map((row) => String(Object.values(row)[0]));
  return lines.length === 1 && lines[0] === "ok" ? [] : lines;
}

/** `quick_check` of one file on a read-only connection; a file SQLite cannot even read is damaged too. */
function problemsOf(path: string): string[] {
  try {
    return readQuietly(path, (driver) => checkLines(driver, "quick_check"));
  } catch (error) {
    const damage = damageOf(error);
    if (damage !== undefined) return [damage];
    throw error;
  }
}

/**
 * Checks every database of a home and quarantines each damaged one (a marker beside it, which
 * makes every later open refuse it until `doctor --fix` salvages it). Changes no database.
 */
export function checkHomeDatabases(home: string, now = Date.now()): DatabaseHealth[] {
  return homeDatabases(home).map(({ path, role }) => {
    const marker = readDamageMarker(path);
    if (marker !== null) return { path, role, status: "damaged", problems: marker.problems };
    const problems = problemsOf(path);
    if (problems.length === 0) return { path, role, status: "ok", problems };
    markDamaged(path, problems, now);
    return { path, role, status: "damaged", problems };
  });
}
