import {
  closeSync,
  type Dirent,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
} from "node:fs";
import { join, relative } from "node:path";
import { RESTORE_WORK_DIR } from "../db/pending-restore.js";
import { type ManifestSkip, toArchivePath } from "./manifest.js";

const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");
/** Backups never contain earlier backups. */
export const BACKUPS_DIR = "backups";
const SQLITE_SIDECAR = /\.(sqlite|sqlite3|db)-(wal|shm|journal)$/;
const ANY_SIDECAR = /^(.*)-(wal|shm|journal)$/;

export interface HomeFile {
  /** Relative to the home, "/"-separated. */
  homePath: string;
  path: string;
  /** Size when the home was listed (for progress; the archive records what it read). */
  bytes: number;
}

export interface HomeInventory {
  /** Regular files to archive as they are. */
  files: HomeFile[];
  /** Further SQLite databases, to snapshot rather than copy. */
  databases: HomeFile[];
  skipped: ManifestSkip[];
}

function isSqliteFile(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const header = Buffer.alloc(SQLITE_MAGIC.length);
    return (
      readSync(fd, header, 0, header.length, 0) === header.length && header.equals(SQLITE_MAGIC)
    );
  } finally {
    closeSync(fd);
  }
}

/**
 * A live SQLite sidecar: copied raw it would be a torn copy, and its committed content reaches the
 * archive through its database's snapshot anyway.
 */
function isSidecar(path: string, name: string): boolean {
  if (SQLITE_SIDECAR.test(name)) return true;
  const base = ANY_SIDECAR.exec(path)?.[1];
  if (base === undefined || !existsSync(base)) return false;
  try {
    return isSqliteFile(base);
  } catch {
    return false; // An unreadable base is no evidence; the file itself is archived.
  }
}

class Walk {
  readonly inventory: HomeInventory = { files: [], databases: [], skipped: [] };

  constructor(
    private readonly home: string,
    private readonly exclude: ReadonlySet<string>,
  ) {}

  visit(dir: string): void {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (error) {
      this.skip(dir, error);
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (this.exclude.has(path)) continue;
      if (dir === this.home && (entry.name === BACKUPS_DIR || entry.name === RESTORE_WORK_DIR))
        continue;
      if (entry.isDirectory()) this.visit(path);
      else if (entry.isSymbolicLink()) this.note(path, "symbolic link (not followed)");
      else if (!entry.isFile()) this.note(path, "not a regular file");
      else if (!isSidecar(path, entry.name)) this.classify(path);
    }
  }

  private classify(path: string): void {
    try {
      const file = {
        homePath: toArchivePath(relative(this.home, path)),
        path,
        bytes: lstatSync(path).size,
      };
      (isSqliteFile(path) ? this.inventory.databases : this.inventory.files).push(file);
    } catch (error) {
      this.skip(path, error);
    }
  }

  private skip(path: string, error: unknown): void {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      this.note(path, "vanished during the backup");
      return;
    }
    if (code === "EACCES" || code === "EPERM") {
      this.note(path, `unreadable (${code})`);
      return;
    }
    throw error;
  }

  note(path: string, reason: string): void {
    this.inventory.skipped.push({ homePath: toArchivePath(relative(this.home, path)), reason });
  }
}

/**
 * Everything in the home a backup should carry besides its own databases: config, credentials,
 * workspaces, legacy files. Leaves out `backups/`, a restore's work directory, the `exclude`d paths (the live databases, the
 * backup's own output), and SQLite sidecars; symbolic links are recorded as skipped, never followed.
 */
export function inventoryHome(home: string, exclude: ReadonlySet<string>): HomeInventory {
  const walk = new Walk(home, exclude);
  walk.visit(home);
  return walk.inventory;
}
