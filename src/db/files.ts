import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { StateError } from "./errors.js";

export const DIR_MODE = 0o700;
export const FILE_MODE = 0o600;
const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");
const HEADER_BYTES = 100;
const USER_VERSION_OFFSET = 60;
const WRITE_VERSION_OFFSET = 18;
const READ_VERSION_OFFSET = 19;

/** Creates a directory (and missing parents) owner-only; tightens it when it already exists. */
export function ensurePrivateDir(path: string): void {
  // Only the directories created here are made owner-only (chmod too: the mode given to mkdir
  // passes through the umask). One that already existed is the user's: a database put straight
  // into /tmp must not turn /tmp into 0700.
  const first = mkdirSync(path, { recursive: true, mode: DIR_MODE });
  if (first === undefined) return;
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    chmodSync(dir, DIR_MODE);
    if (dir === resolve(first) || dir === dirname(dir)) break;
  }
}

/** Creates an empty owner-only file if nothing is at `path`; never truncates an existing one. */
export function ensurePrivateFile(path: string): void {
  try {
    closeSync(openSync(path, "wx", FILE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

/** Sets 0600 on the files that exist among `paths` (SQLite creates -wal/-shm lazily). */
export function tightenFiles(paths: readonly string[]): void {
  for (const path of paths) {
    try {
      chmodSync(path, FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
}

export interface DatabaseFileProbe {
  exists: boolean;
  /** user_version as written in the file header (0 for a new or empty file). */
  headerUserVersion: number;
  /** The header says WAL (read and write versions 2): `journal_mode=WAL` is persistent. */
  headerWal: boolean;
  /** Device, inode and birth time of an existing file: another file at the same path differs. */
  identity?: string;
}

/**
 * Looks at a database file without opening it through SQLite, so that a file that is not ours
 * (not SQLite at all, or written by a newer agentstate) is refused before anything could change it.
 */
export function probeDatabaseFile(path: string): DatabaseFileProbe {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return { exists: false, headerUserVersion: 0, headerWal: false };
  if (!stat.isFile()) {
    throw new StateError("E_NOT_A_DATABASE", `not a database file (not a regular file): ${path}`, {
      details: { path },
    });
  }
  // The birth time tells apart a new file that reuses a deleted one's inode number.
  const identity = `${stat.dev}:${stat.ino}:${stat.birthtimeMs}`;
  if (stat.size === 0) return { exists: true, headerUserVersion: 0, headerWal: false, identity };
  const header = Buffer.alloc(HEADER_BYTES);
  const fd = openSync(path, "r");
  let read: number;
  try {
    read = readSync(fd, header, 0, HEADER_BYTES, 0);
  } finally {
    closeSync(fd);
  }
  if (read < HEADER_BYTES || !header.subarray(0, SQLITE_HEADER.length).equals(SQLITE_HEADER)) {
    throw new StateError(
      "E_NOT_A_DATABASE",
      `not a SQLite database: ${path} (refusing to open it; the file was left untouched)`,
      { details: { path, bytes: stat.size } },
    );
  }
  return {
    exists: true,
    headerUserVersion: header.readUInt32BE(USER_VERSION_OFFSET),
    headerWal: header[WRITE_VERSION_OFFSET] === 2 && header[READ_VERSION_OFFSET] === 2,
    identity,
  };
}
