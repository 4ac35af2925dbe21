import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { StateError } from "../../db/errors.js";

// The one place a store touches files: cold archives live beside the agent database they were
// moved out of (agents/<id>/agent/cold/), and their rows and files change together, so the store
// that owns the rows writes the files. Everything here is plain bytes; the format is
// src/transcript/cold-archive.ts.

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;
const ARCHIVE_SUFFIX = ".cold";
const TEMP_SUFFIX = ".cold.tmp";

/** The cold directory of the agent whose database is at `dbPath`. */
export function coldDirOf(dbPath: string): string {
  return join(dirname(dbPath), "cold");
}

/**
 * A new archive file name for a session, by its number (a session id may hold characters a file
 * name cannot): unique per move, so a restore deletes exactly the file it restored from and never
 * one a later move of the same session wrote.
 */
export function newArchiveName(sessionNo: number): string {
  return `s${sessionNo}.${randomBytes(6).toString("hex")}${ARCHIVE_SUFFIX}`;
}

const COLD_FILE = /^s(\d+)\.[0-9a-f]{12}\.cold(\.tmp)?$/;

/** The session number a file of the cold directory belongs to, or undefined for a foreign file. */
export function sessionNoOfFile(name: string): number | undefined {
  const match = COLD_FILE.exec(name);
  return match === null ? undefined : Number(match[1]);
}

/** fsync a directory, so that a rename or link in it survives a crash (best effort where unsupported). */
export function syncDirectory(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EINVAL" && code !== "EPERM") throw error;
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `chunks` as `dir/name` the crash-safe way: a temp file, fsync, rename, fsync of the
 * directory. A crash leaves either no file, a temp file, or the whole file.
 */
export function writeArchiveFile(dir: string, name: string, chunks: readonly Buffer[]): string {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  chmodSync(dir, DIR_MODE);
  const path = join(dir, name);
  const temp = `${path.slice(0, -ARCHIVE_SUFFIX.length)}${TEMP_SUFFIX}`;
  const fd = openSync(temp, "wx", FILE_MODE);
  try {
    for (const chunk of chunks) {
      for (let done = 0; done < chunk.length; ) done += writeSync(fd, chunk, done);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  syncDirectory(dir);
  return path;
}

/** An archive file opened for reads at offsets. */
export interface OpenArchiveFile {
  size: number;
  readAt(offset: number, length: number): Buffer;
  close(): void;
}

/** Opens `path` for reading; undefined when it does not exist. */
export function openArchiveFile(path: string): OpenArchiveFile | undefined {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StateError("E_IO", `cannot open cold archive ${path}`, { cause: error });
  }
  return {
    size: fstatSync(fd).size,
    readAt(offset, length) {
      const buffer = Buffer.allocUnsafe(length);
      let done = 0;
      while (done < length) {
        const read = readSync(fd, buffer, done, length - done, offset + done);
        if (read === 0) throw new StateError("E_CORRUPT", `cold archive ${path} ends early`);
        done += read;
      }
      return buffer;
    },
    close: () => closeSync(fd),
  };
}

/** The size of `path`, or undefined when it does not exist. */
export function fileSize(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Deletes `path` if it exists. */
export function removeFile(path: string): void {
  rmSync(path, { force: true });
}

/** The names of the archive and temp files in `dir` (none when it does not exist). */
export function listColdFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => sessionNoOfFile(name) !== undefined);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
