import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { StateError } from "../db/errors.js";
import type { VirtualAgentFs } from "../stores/agent/vfs-store.js";
import { VFS_CHUNK_BYTES } from "../vfs/chunks.js";
import { hostPathFor, vfsJoin } from "../vfs/path.js";
import type { SyncReport } from "./sync.js";

/** What a materialized entry was, by canonical VFS path: to tell edits from untouched files. */
export type HostManifest = Map<string, { kind: "file" | "directory"; sha256?: string }>;

export interface HostEntry {
  path: string;
  host: string;
  kind: "file" | "directory";
}

// O_NOFOLLOW: a file swapped for a symlink after it was listed is refused, not followed.
const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0);
// O_EXCL: never write through anything already at the path (a planted symlink included).
const CREATE_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;

/** Writes chunks to a new host file (0600, never an existing path); returns their SHA-256. */
export function writeHostFile(path: string, chunks: Iterable<Buffer>): string {
  const hash = createHash("sha256");
  const fd = fs.openSync(path, CREATE_FLAGS, 0o600);
  try {
    for (const chunk of chunks) {
      hash.update(chunk);
      for (let offset = 0; offset < chunk.length; ) {
        offset += fs.writeSync(fd, chunk, offset);
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest("hex");
}

/** A host file's bytes in chunks, without following a symlink. */
export function* readHostFile(path: string): IterableIterator<Buffer> {
  const fd = fs.openSync(path, READ_FLAGS);
  try {
    if (!fs.fstatSync(fd).isFile()) throw notRegular(path);
    for (;;) {
      const buffer = Buffer.allocUnsafe(VFS_CHUNK_BYTES);
      const read = fs.readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) return;
      yield buffer.subarray(0, read);
    }
  } finally {
    fs.closeSync(fd);
  }
}

export function hashHostFile(path: string): string {
  const hash = createHash("sha256");
  for (const chunk of readHostFile(path)) hash.update(chunk);
  return hash.digest("hex");
}

function notRegular(path: string): StateError {
  return new StateError("E_PATH", `${path} is not a regular file`, { details: { path } });
}

/**
 * Writes the VFS subtree `base` (a directory) into the existing empty host directory `dir`:
 * directories 0700, files 0600, nothing outside `dir`. Returns the manifest for a later sync.
 */
export function materialize(vfs: VirtualAgentFs, base: string, dir: string): HostManifest {
  const manifest: HostManifest = new Map();
  for (const entry of vfs.list(base)) {
    const host = hostPathFor(dir, base, entry.path);
    if (entry.kind === "directory") {
      fs.mkdirSync(host, { mode: 0o700 });
      manifest.set(entry.path, { kind: "directory" });
    } else {
      manifest.set(entry.path, {
        kind: "file",
        sha256: writeHostFile(host, vfs.readChunks(entry.path)),
      });
    }
  }
  return manifest;
}

function isInside(root: string, target: string): boolean {
  return target === root || target.startsWith(`${root}${sep}`);
}

/**
 * Where a symlink points, judged without following it for content: outside the tree is E_PATH,
 * inside is reported as skipped (the VFS has no links, and a link is never followed).
 */
function checkSymlink(root: string, host: string, path: string): string {
  const lexical = resolve(dirname(host), fs.readlinkSync(host));
  let real = lexical;
  try {
    real = fs.realpathSync(host);
  } catch {
    // A dangling link: only its lexical target can be judged.
  }
  if (!isInside(root, lexical) || !isInside(root, real)) {
    throw new StateError(
      "E_PATH",
      `refusing symlink ${host} -> ${fs.readlinkSync(host)}: it points outside ${root}`,
      { details: { path, host, target: real } },
    );
  }
  return "symbolic link (not followed; the VFS has no links)";
}

/** The VFS path of a host name, or E_PATH naming the host file when the VFS refuses the name. */
function vfsPathOf(dir: string, name: string, host: string): string {
  try {
    return vfsJoin(dir, name);
  } catch (error) {
    if (!(error instanceof StateError)) throw error;
    throw new StateError("E_PATH", `${host}: ${error.message}`, {
      cause: error,
      details: { ...error.details, host },
    });
  }
}

/**
 * Lists a host directory as VFS entries below `base`, children after their parent, never
 * following a symlink. Every name goes through the VFS path normalizer (E_PATH when refused);
 * two host names that normalize to the same VFS path are E_PATH too.
 */
export function scanHost(
  root: string,
  base: string,
): { entries: HostEntry[]; skipped: SyncReport["skipped"] } {
  const top = fs.realpathSync(root);
  const entries: HostEntry[] = [];
  const skipped: SyncReport["skipped"] = [];
  const seen = new Set<string>();
  const walk = (hostDir: string, vfsDir: string): void => {
    for (const dirent of fs.readdirSync(hostDir, { withFileTypes: true })) {
      const host = join(hostDir, dirent.name);
      const path = vfsPathOf(vfsDir, dirent.name, host);
      if (seen.has(path)) {
        throw new StateError(
          "E_PATH",
          `host names collide as VFS path ${JSON.stringify(path)} (${host})`,
          { details: { path, host } },
        );
      }
      seen.add(path);
      if (dirent.isSymbolicLink()) skipped.push({ path, reason: checkSymlink(top, host, path) });
      else if (dirent.isDirectory()) {
        entries.push({ path, host, kind: "directory" });
        walk(host, path);
      } else if (dirent.isFile()) entries.push({ path, host, kind: "file" });
      else skipped.push({ path, reason: "not a regular file or directory" });
    }
  };
  walk(top, base);
  return { entries, skipped };
}

/** Removes a temp tree, also when a command left directories without write permission. */
export function removeHostTree(dir: string): void {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    const unlock = (path: string): void => {
      if (!fs.lstatSync(path).isDirectory()) return;
      fs.chmodSync(path, 0o700);
      for (const name of fs.readdirSync(path)) unlock(join(path, name));
    };
    unlock(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
