import { createHash } from "node:crypto";
import type { StateError } from "../../db/errors.js";
import { type VfsErrno, vfsError, vfsPathError } from "../../vfs/errors.js";
import {
  type ParsedVfsPath,
  parseVfsPath,
  VFS_ROOT,
  vfsBaseName,
  vfsParent,
} from "../../vfs/path.js";
import type { VfsMetadata } from "./vfs-options.js";
import type { VfsFileHead, VfsHead, VfsKind, VfsTable } from "./vfs-table.js";

export interface VfsStat {
  /** Canonical path: `/` or `/a/b`. */
  path: string;
  name: string;
  kind: VfsKind;
  size: number;
  /** Last modification (the mtime), Unix ms. */
  updatedAt: number;
  metadata: VfsMetadata;
}

export interface VfsDirent {
  name: string;
  kind: VfsKind;
}

/** What an operation was doing, for its error message and `details`. */
export interface VfsOp {
  op: string;
  path: string;
  dest?: string;
}

/** The root exists implicitly in every namespace; it has no row. */
const ROOT: VfsHead = Object.freeze({
  id: 0,
  path: VFS_ROOT,
  kind: "directory",
  size_bytes: 0,
  chunk_count: 0,
  metadata_json: "{}",
  updated_at: 0,
});

export function toStat(head: VfsHead): VfsStat {
  return {
    path: head.path,
    name: vfsBaseName(head.path),
    kind: head.kind,
    size: head.size_bytes,
    updatedAt: head.updated_at,
    metadata: JSON.parse(head.metadata_json) as VfsMetadata,
  };
}

/**
 * Path lookups of one namespace with POSIX's answers when they fail (ENOENT, ENOTDIR, EISDIR,
 * EEXIST, ENOTEMPTY): the checks VirtualAgentFs runs inside its transactions.
 */
export class VfsResolver {
  constructor(
    private readonly table: VfsTable,
    readonly namespace: string,
  ) {}

  lookup(path: string): VfsHead | undefined {
    return path === VFS_ROOT ? ROOT : this.table.head.get(this.namespace, path);
  }

  statOf(path: string): VfsStat {
    return toStat(this.lookup(path) as VfsHead);
  }

  error(errno: VfsErrno, op: VfsOp): StateError {
    return vfsError(errno, { namespace: this.namespace, ...op });
  }

  /** Why `path` is missing: ENOTDIR when a component on the way is a file, else ENOENT. */
  missing(path: string, op: VfsOp): StateError {
    let at = "";
    for (const segment of path.split("/").slice(1, -1)) {
      at = `${at}/${segment}`;
      const head = this.lookup(at);
      if (!head) break;
      if (head.kind !== "directory") return this.error("ENOTDIR", op);
    }
    return this.error("ENOENT", op);
  }

  /** The entry at a parsed path; a trailing slash on a file is ENOTDIR, as in POSIX. */
  existing(parsed: ParsedVfsPath, op: VfsOp): VfsHead {
    const head = this.lookup(parsed.path);
    if (!head) throw this.missing(parsed.path, op);
    if (head.kind === "file" && parsed.directoryHint) throw this.error("ENOTDIR", op);
    return head;
  }

  requireDir(dir: string, op: VfsOp): VfsHead {
    const head = this.lookup(dir);
    if (!head) throw this.missing(dir, op);
    if (head.kind !== "directory") throw this.error("ENOTDIR", op);
    return head;
  }

  /** `mkdir -p`: creates what is missing; a file on the way is ENOTDIR, at the end EEXIST. */
  mkdirp(path: string, op: VfsOp, now: number): VfsHead {
    let head = ROOT;
    for (const segment of path === VFS_ROOT ? [] : path.split("/").slice(1)) {
      const at = head.path === VFS_ROOT ? `/${segment}` : `${head.path}/${segment}`;
      let found = this.lookup(at);
      if (found && found.kind !== "directory") {
        throw this.error(at === path ? "EEXIST" : "ENOTDIR", op);
      }
      if (!found) {
        this.table.add(this.namespace, at, head.path, "directory", now);
        found = this.lookup(at) as VfsHead;
      }
      head = found;
    }
    return head;
  }

  /** A path a file operation may name: not the root, no trailing slash (else E_PATH). */
  filePath(path: string, op: string): string {
    const parsed = parseVfsPath(path);
    const where = { namespace: this.namespace, op, path: parsed.path };
    if (parsed.path === VFS_ROOT) throw vfsPathError(where, "the root is a directory, not a file");
    if (parsed.directoryHint) {
      throw vfsPathError({ ...where, path }, 'ends with "/", which names a directory');
    }
    return parsed.path;
  }

  /** A path that is not the root (which cannot be moved, copied or removed). */
  notRoot(path: string, op: string): ParsedVfsPath {
    const parsed = parseVfsPath(path);
    if (parsed.path === VFS_ROOT) {
      throw vfsPathError(
        { namespace: this.namespace, op, path: VFS_ROOT },
        "the root cannot be moved, copied or removed",
      );
    }
    return parsed;
  }

  /** The file at a write target (or none) once its parent is known to be a directory. */
  fileTarget(path: string, op: string, parents: boolean, now: number): VfsHead | undefined {
    const where = { op, path };
    if (parents) this.mkdirp(vfsParent(path), where, now);
    else this.requireDir(vfsParent(path), where);
    const existing = this.lookup(path);
    if (existing?.kind === "directory") throw this.error("EISDIR", where);
    return existing;
  }

  /** The file a read names, with a small file's bytes; a directory is EISDIR. */
  fileHead(path: string, op: string): VfsFileHead {
    const target = this.filePath(path, op);
    const head = this.table.fileHead.get(this.namespace, target);
    if (!head) throw this.missing(target, { op, path: target });
    if (head.kind === "directory") throw this.error("EISDIR", { op, path: target });
    return head;
  }

  /**
   * Frees a rename destination under rename(2)'s rules: a file replaces a file, a directory an
   * empty directory; anything else is EISDIR, ENOTDIR or ENOTEMPTY.
   */
  clearForRename(source: VfsHead, dest: string, op: VfsOp): void {
    const existing = this.lookup(dest);
    if (!existing) return;
    if (source.kind === "file" && existing.kind === "directory") throw this.error("EISDIR", op);
    if (source.kind === "directory" && existing.kind === "file") throw this.error("ENOTDIR", op);
    if (existing.kind === "directory" && this.table.hasChild.get(this.namespace, dest)?.found) {
      throw this.error("ENOTEMPTY", op);
    }
    this.table.deleteEntry.run(existing.id);
  }

  /** Frees a copy destination: only a file over a file, and only when overwriting. */
  clearForCopy(source: VfsHead, dest: string, op: VfsOp, overwrite: boolean): void {
    const existing = this.lookup(dest);
    if (!existing) return;
    if (!overwrite || existing.kind !== "file" || source.kind !== "file") {
      throw this.error("EEXIST", op);
    }
    this.table.deleteEntry.run(existing.id);
  }

  /** Copies an entry (and, for a directory, everything below) to `dest`; bytes stay in SQLite. */
  copyTree(head: VfsHead, dest: string, now: number): void {
    for (const entry of this.subtree(head)) {
      const path = dest + entry.path.slice(head.path.length);
      const id = this.table.copyEntry.run(path, vfsParent(path), now, entry.id).lastInsertRowid;
      if (entry.chunk_count > 0) this.table.copyChunks.run(Number(id), entry.id);
    }
  }

  /** A digest of identity, path, kind, size and mtime of an entry and everything below it. */
  fingerprint(head: VfsHead): string {
    const hash = createHash("sha256");
    for (const row of this.subtree(head)) {
      hash.update(`${row.id}\0${row.path}\0${row.kind}\0${row.size_bytes}\0${row.updated_at}\n`);
    }
    return hash.digest("hex");
  }

  /** The entry itself and, for a directory, everything below it, in path order. */
  subtree(head: VfsHead): VfsHead[] {
    if (head.kind !== "directory") return [head];
    const below = this.table.listDescendants(this.namespace, head.path);
    return head.path === VFS_ROOT ? below : [head, ...below];
  }
}
