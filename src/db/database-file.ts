// Creating a database file and the pragmas every connection of one gets.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { threadId } from "node:worker_threads";
import { checkedVersion, noteChecked } from "./checked-files.js";
import type { DriverFactory, SqlDriver } from "./driver.js";
import { type DatabaseFileProbe, ensurePrivateFile, FILE_MODE, tightenFiles } from "./files.js";
import type { JournalMode } from "./filesystem.js";
import { finishLayoutUpgrade, type UpgradeProgressListener } from "./layout-upgrade.js";
import { type DatabaseRole, type MigrationResult, migrate } from "./schema.js";

/** The pragmas every connection gets, in the order they must be set. */
export const CONNECTION_PRAGMAS = [
  ["busy_timeout", "30000"],
  ["journal_mode", "WAL"],
  ["synchronous", "NORMAL"],
  ["foreign_keys", "ON"],
  // The driver's default page cache is 16 MB per connection; a home keeps one connection per
  // agent open, so that multiplies. 4 MB holds the hot pages; the OS cache holds the rest.
  ["cache_size", "-4000"],
  // JOURNAL_SIZE_LIMIT (64 MiB): a WAL bigger than that is cut back when it restarts.
  ["journal_size_limit", "67108864"],
] as const;

/**
 * Sets `CONNECTION_PRAGMAS` (the journal mode as chosen) on a new connection. WAL is persistent in
 * the file: when its header already says WAL, asking again is skipped.
 */
export function applyPragmas(driver: SqlDriver, mode: JournalMode, headerWal = false): void {
  for (const [name, value] of CONNECTION_PRAGMAS) {
    if (name === "journal_mode" && mode === "wal" && headerWal) continue;
    const chosen = name === "journal_mode" && mode === "rollback" ? "DELETE" : value;
    driver.exec(`PRAGMA ${name} = ${chosen}`);
  }
}

/**
 * Brings a new connection to an existing file up to date: pragmas, pending migrations, a pending
 * layout upgrade, owner-only file modes. A file this process already brought up (same inode, same
 * version; see checked-files.ts) skips the checks only a different file could fail.
 */
export function prepareConnection(
  driver: SqlDriver,
  role: DatabaseRole,
  mode: JournalMode,
  probe: DatabaseFileProbe,
  onProgress?: UpgradeProgressListener,
): MigrationResult {
  const path = driver.path;
  applyPragmas(driver, mode, probe.headerWal);
  const checkedAt = checkedVersion(path, probe.identity);
  const migration = migrate(driver, role, checkedAt);
  if (checkedAt === undefined || migration.from !== checkedAt || migration.applied.length > 0) {
    if (role === "agent") finishLayoutUpgrade(driver, { onProgress });
    // A -wal or -shm SQLite creates later takes the database file's mode.
    tightenFiles([path, `${path}-wal`, `${path}-shm`]);
  }
  noteChecked(path, probe.identity, migration.to);
  return migration;
}

/**
 * A fresh database of each role and journal mode, as the migrations build it, kept as bytes for
 * the life of the process (a few hundred KB). Building one runs every migration: about 40 ms for
 * an agent, most of it SQLite reading back a schema that each DDL statement changed. A copy is a
 * write and an fsync, so a process creating thousands of agents pays the migrations once.
 */
const templates = new Map<string, Buffer>();

/**
 * Creates a new database at `path` (incremental auto-vacuum, the journal mode, the full schema):
 * made beside it, on disk, then linked into place in one step. Connections racing to create the
 * same file then never see a half-initialized file or convert its journal mode at the same time
 * (which SQLite answers with BUSY or I/O errors); the loser of the race simply opens the winner's.
 */
export function createDatabaseFile(
  path: string,
  role: DatabaseRole,
  factory: DriverFactory,
  mode: JournalMode,
): void {
  const key = `${role}:${mode}`;
  removeDeadDrafts(path);
  const draft = draftPath(path);
  try {
    const template = templates.get(key);
    if (template === undefined || !writeSynced(draft, template)) {
      buildDraft(draft, role, factory, mode);
      if (template === undefined) templates.set(key, readFileSync(draft));
    }
    try {
      linkSync(draft, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  } finally {
    for (const suffix of ["", "-wal", "-shm", "-journal"]) {
      rmSync(`${draft}${suffix}`, { force: true });
    }
  }
}

/**
 * A new file's name while it is made beside `path`: it names the process, so `removeDeadDrafts`
 * removes it once that process is gone.
 */
export function draftPath(path: string): string {
  return `${path}.new-${process.pid}-${threadId}-${randomBytes(4).toString("hex")}`;
}

/**
 * Removes the drafts (and their journals) that processes killed while creating `path` left
 * beside it: those of a process that is gone. A live process's draft may be in use.
 */
export function removeDeadDrafts(path: string): void {
  const prefix = `${basename(path)}.new-`;
  let names: string[];
  try {
    names = readdirSync(dirname(path)).filter((name) => name.startsWith(prefix));
  } catch {
    return; // No directory yet: nothing was left in it.
  }
  for (const name of names) {
    const pid = Number(name.slice(prefix.length).split("-")[0]);
    if (Number.isInteger(pid) && pid > 0 && !processAlive(pid)) {
      rmSync(join(dirname(path), name), { force: true });
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Runs the migrations on a new file at `draft`, left closed and whole. */
function buildDraft(draft: string, role: DatabaseRole, factory: DriverFactory, mode: JournalMode) {
  ensurePrivateFile(draft);
  const driver = factory(draft, { fileMustExist: true });
  try {
    // Only an empty file can take it (the pointer map starts with the first table), and only
    // with it can the freelist be given back in small steps later (free-pages.ts).
    driver.exec("PRAGMA auto_vacuum = INCREMENTAL");
    applyPragmas(driver, mode);
    migrate(driver, role);
    if (role === "agent") {
      finishLayoutUpgrade(driver);
      // A new agent has no cold search rows to move to its cold index file (agent/0017).
      driver.exec("DROP TABLE cold_fts");
    }
  } finally {
    // The only connection: its close copies the WAL back into the file and removes it.
    driver.close();
  }
}

/** Whether a process may fsync (Node's permission model refuses it); learnt on the first try. */
let fsyncAllowed = true;

/**
 * The file, written and on disk before it is linked anywhere (0600, never over another); false
 * when this process may not fsync, and nothing was written (SQLite's own syncs serve then).
 */
function writeSynced(path: string, bytes: Buffer): boolean {
  if (!fsyncAllowed) return false;
  const fd = openSync(path, "wx", FILE_MODE);
  try {
    for (let done = 0; done < bytes.length; ) {
      done += writeSync(fd, bytes, done, bytes.length - done, done);
    }
    fsyncSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ERR_ACCESS_DENIED") throw error;
    fsyncAllowed = false;
    return false;
  } finally {
    closeSync(fd);
    if (!fsyncAllowed) rmSync(path, { force: true });
  }
}
