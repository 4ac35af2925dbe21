import { Readable } from "node:stream";
import type { Database } from "../../db/database.js";
import { rejectUnknownOptions } from "../../db/options.js";
import { type ByteSource, toBuffer } from "../../vfs/chunks.js";
import { vfsErrnoOf } from "../../vfs/errors.js";
import { isVfsDescendant, parseVfsPath, VFS_ROOT, vfsBaseName, vfsParent } from "../../vfs/path.js";
import { StagedFile, VfsContent } from "./vfs-content.js";
import {
  type CopyOptions,
  checkVfsNamespace,
  DEFAULT_VFS_NAMESPACE,
  type MkdirOptions,
  metadataJsonOf,
  type RmOptions,
  type VfsMetadata,
  type VfsNamespaceInfo,
  type WriteFileOptions,
} from "./vfs-options.js";
import { toStat, type VfsDirent, VfsResolver, type VfsStat } from "./vfs-resolver.js";
import { type VfsKind, VfsTable } from "./vfs-table.js";

export {
  type CopyOptions,
  DEFAULT_VFS_NAMESPACE,
  type MkdirOptions,
  type RmOptions,
  StagedFile,
  type VfsDirent,
  type VfsKind,
  type VfsMetadata,
  type VfsNamespaceInfo,
  type VfsStat,
  type WriteFileOptions,
};

const WRITE_OPTIONS = ["metadata", "parents"] as const;

/**
 * A scratch filesystem over the agent database: one tree per namespace, fs-like semantics with
 * POSIX's error conditions (in `details.errno`), each mutating method one transaction (a
 * savepoint inside `batch`). Paths go through `parseVfsPath`; there are no symlinks.
 */
export class VirtualAgentFs {
  readonly namespace: string;
  private readonly content: VfsContent;
  private readonly at: VfsResolver;

  constructor(
    private readonly db: Database,
    namespace: string = DEFAULT_VFS_NAMESPACE,
    private readonly table: VfsTable = new VfsTable(db),
  ) {
    this.namespace = checkVfsNamespace(namespace);
    this.content = new VfsContent(table, this.namespace);
    this.at = new VfsResolver(table, this.namespace);
  }

  /** Runs `fn` in one transaction: many small writes commit once, all or nothing. */
  batch<T>(fn: () => T): T {
    return this.db.tx(fn);
  }

  /** Creates or replaces a file (content and metadata). */
  writeFile(path: string, data: string | Uint8Array, options: WriteFileOptions = {}): VfsStat {
    const bytes = toBuffer(data);
    return this.replaceFile(path, options, "vfs.writeFile", {
      size: bytes.length,
      create: (target, metadataJson, now) =>
        this.content.create(target, vfsParent(target), bytes, metadataJson, now),
      write: (target, metadataJson, now) => {
        this.content.insert(target, vfsParent(target), bytes, metadataJson, now);
      },
    });
  }

  /** `writeFile` from a stream or (async) iterable: chunks are staged, then committed at once. */
  async writeFileStream(
    path: string,
    source: ByteSource,
    options: WriteFileOptions = {},
  ): Promise<VfsStat> {
    rejectUnknownOptions(options, WRITE_OPTIONS, "vfs.writeFileStream");
    const target = this.at.filePath(path, "writeFile");
    metadataJsonOf(options.metadata, `vfs.writeFile ${target}`);
    const staged = await this.stage(source);
    try {
      return this.commitStaged(target, staged, options);
    } catch (error) {
      this.discardStaged(staged);
      throw error;
    }
  }

  /** Streams bytes into hidden rows for a later `commitStaged` (many files, one commit). */
  stage(source: ByteSource): Promise<StagedFile> {
    return this.content.stage(source, "(staged file)");
  }

  /** Makes a staged file visible at `path`, replacing a file there. One transaction. */
  commitStaged(path: string, staged: StagedFile, options: WriteFileOptions = {}): VfsStat {
    return this.replaceFile(path, options, "vfs.commitStaged", {
      size: staged.size,
      write: (target, metadataJson, now) => {
        this.content.promote(staged, target, vfsParent(target), metadataJson, now);
      },
    });
  }

  /** Drops a staged file that will not be committed. */
  discardStaged(staged: StagedFile): void {
    this.content.discard(staged);
  }

  /** Appends to a file, creating it when missing. */
  appendFile(path: string, data: string | Uint8Array): VfsStat {
    const target = this.at.filePath(path, "appendFile");
    const bytes = toBuffer(data);
    return this.db.tx(() => {
      const now = Date.now();
      const existing = this.at.fileTarget(target, "appendFile", false, now);
      if (existing) this.content.append(existing, bytes, now);
      else this.content.insert(target, vfsParent(target), bytes, "{}", now);
      return this.at.statOf(target);
    });
  }

  /** The whole file; text and binary bytes exactly as written. */
  readFile(path: string): Buffer;
  readFile(path: string, encoding: BufferEncoding): string;
  readFile(path: string, encoding?: BufferEncoding): Buffer | string {
    const data = this.content.read(this.at.fileHead(path, "readFile"), "readFile");
    return encoding === undefined ? data : data.toString(encoding);
  }

  /** The file chunk by chunk (at most 256 KiB each): bounded memory for any size. */
  readChunks(path: string): IterableIterator<Buffer> {
    return this.content.chunks(this.at.fileHead(path, "readChunks"), "readChunks");
  }

  /** A byte stream of the file, read one chunk at a time as the consumer pulls. */
  createReadStream(path: string): Readable {
    return Readable.from(this.readChunks(path), { objectMode: false });
  }

  /** Creates a directory; by default also its parents, and an existing directory is fine. */
  mkdir(path: string, options: MkdirOptions = {}): VfsStat {
    rejectUnknownOptions(options, ["recursive"], "vfs.mkdir");
    const target = parseVfsPath(path).path;
    const op = { op: "mkdir", path: target };
    return this.db.tx(() => {
      const now = Date.now();
      if (options.recursive !== false) return toStat(this.at.mkdirp(target, op, now));
      if (this.at.lookup(target)) throw this.at.error("EEXIST", op);
      this.at.requireDir(vfsParent(target), op);
      this.table.add(this.namespace, target, vfsParent(target), "directory", now);
      return this.at.statOf(target);
    });
  }

  /** The entries of a directory, sorted by name (code point order). */
  readdir(path: string = VFS_ROOT): VfsDirent[] {
    return this.readdirStats(path).map(({ name, kind }) => ({ name, kind }));
  }

  /** The entries of a directory with their stats (size, mtime, metadata), sorted by name. */
  readdirStats(path: string = VFS_ROOT): VfsStat[] {
    const dir = parseVfsPath(path).path;
    this.at.requireDir(dir, { op: "readdir", path: dir });
    return this.table.children.all(this.namespace, dir).map(toStat);
  }

  stat(path: string): VfsStat {
    const parsed = parseVfsPath(path);
    return toStat(this.at.existing(parsed, { op: "stat", path: parsed.path }));
  }

  exists(path: string): boolean {
    const parsed = parseVfsPath(path);
    const head = this.at.lookup(parsed.path);
    return head !== undefined && !(parsed.directoryHint && head.kind === "file");
  }

  /** Every entry below a directory (not the directory itself), in path order. */
  list(path: string = VFS_ROOT): VfsStat[] {
    const dir = parseVfsPath(path).path;
    this.at.requireDir(dir, { op: "list", path: dir });
    return this.table.listDescendants(this.namespace, dir).map(toStat);
  }

  /**
   * Moves a file or a whole directory in one transaction, by rename(2)'s rules: replaces a file,
   * or an empty directory with a directory; never moves a directory into itself. Chunks stay
   * where they are (they belong to the entry, not its path).
   */
  rename(from: string, to: string): VfsStat {
    const source = this.at.notRoot(from, "rename");
    const dest = this.at.notRoot(to, "rename");
    const op = { op: "rename", path: source.path, dest: dest.path };
    return this.db.tx(() => {
      this.at.requireDir(vfsParent(source.path), op);
      this.at.requireDir(vfsParent(dest.path), op);
      const head = this.at.existing(source, op);
      if (head.kind === "file" && dest.directoryHint) throw this.at.error("ENOTDIR", op);
      if (source.path === dest.path) return toStat(head);
      if (head.kind === "directory" && isVfsDescendant(dest.path, source.path)) {
        throw this.at.error("EINVAL", op);
      }
      // rename(2) checks this before the kinds: an ancestor of the source is never empty.
      if (isVfsDescendant(source.path, dest.path)) throw this.at.error("ENOTEMPTY", op);
      this.at.clearForRename(head, dest.path, op);
      this.table.moveEntry.run(dest.path, vfsParent(dest.path), Date.now(), head.id);
      if (head.kind === "directory") {
        this.table.moveDescendants(this.namespace, source.path, dest.path);
      }
      return this.at.statOf(dest.path);
    });
  }

  /** Removes a file, or a directory with `recursive`; returns how many entries went. */
  rm(path: string, options: RmOptions = {}): number {
    rejectUnknownOptions(options, ["recursive", "force"], "vfs.rm");
    const target = this.at.notRoot(path, "rm");
    const op = { op: "rm", path: target.path };
    return this.db.tx(() => {
      if (!this.at.lookup(target.path)) {
        const missing = this.at.missing(target.path, op);
        // A path below a file (ENOTDIR) is as missing as one below nothing: force ignores both,
        // as Node 24's rmSync and coreutils' `rm -f` do.
        const errno = vfsErrnoOf(missing);
        if (options.force === true && (errno === "ENOENT" || errno === "ENOTDIR")) return 0;
        throw missing;
      }
      const head = this.at.existing(target, op);
      if (head.kind === "directory" && options.recursive !== true) {
        throw this.at.error("EISDIR", op);
      }
      const below =
        head.kind === "directory" ? this.table.removeDescendants(this.namespace, head.path) : 0;
      this.table.deleteEntry.run(head.id);
      return below + 1;
    });
  }

  /**
   * Copies a file or a whole directory to a path that does not exist yet (or, with `overwrite`,
   * over a file). Bytes are copied inside SQLite, never through JavaScript.
   */
  copy(from: string, to: string, options: CopyOptions = {}): VfsStat {
    rejectUnknownOptions(options, ["overwrite"], "vfs.copy");
    const source = this.at.notRoot(from, "copy");
    const dest = this.at.notRoot(to, "copy");
    const op = { op: "copy", path: source.path, dest: dest.path };
    return this.db.tx(() => {
      const head = this.at.existing(source, op);
      this.at.requireDir(vfsParent(dest.path), op);
      if (source.path === dest.path || isVfsDescendant(dest.path, source.path)) {
        throw this.at.error("EINVAL", op);
      }
      this.at.clearForCopy(head, dest.path, op, options.overwrite === true);
      this.at.copyTree(head, dest.path, Date.now());
      return this.at.statOf(dest.path);
    });
  }

  /** Removes every entry of the namespace; returns how many. */
  clear(): number {
    return this.table.clear.run(this.namespace).changes;
  }

  /**
   * A digest of a subtree's entries (identity, path, kind, size, mtime): an equal digest later
   * means nothing below was created, removed, moved or rewritten in between.
   */
  fingerprint(path: string = VFS_ROOT): string {
    const parsed = parseVfsPath(path);
    return this.at.fingerprint(this.at.existing(parsed, { op: "fingerprint", path: parsed.path }));
  }

  /**
   * Writes a file at `path`. The common case, a new small file in an existing directory, is one
   * statement (`create`); anything else is one transaction: check the target, free it, `write`.
   */
  private replaceFile(
    path: string,
    options: WriteFileOptions,
    where: string,
    file: FileWrite,
  ): VfsStat {
    rejectUnknownOptions(options, WRITE_OPTIONS, where);
    const target = this.at.filePath(path, "writeFile");
    const metadataJson = metadataJsonOf(options.metadata, `${where} ${target}`);
    const createdAt = Date.now();
    const updatedAt = file.create?.(target, metadataJson, createdAt)
      ? createdAt
      : this.db.tx(() => {
          const now = Date.now();
          const existing = this.at.fileTarget(target, "writeFile", options.parents === true, now);
          if (existing) this.table.deleteEntry.run(existing.id);
          file.write(target, metadataJson, now);
          return now;
        });
    // Built, not read back: a small-file batch saves one lookup per file.
    return {
      path: target,
      name: vfsBaseName(target),
      kind: "file",
      size: file.size,
      updatedAt,
      metadata: JSON.parse(metadataJson) as VfsMetadata,
    };
  }
}

/** How `replaceFile` puts a file's bytes in place. */
interface FileWrite {
  size: number;
  /** Creates the file in one statement if it can; false when it wrote nothing. */
  create?: (target: string, metadataJson: string, now: number) => boolean;
  /** Creates the file at a target already checked and freed, inside the transaction. */
  write: (target: string, metadataJson: string, now: number) => void;
}

/** The scratch filesystems of one agent database: one `VirtualAgentFs` per namespace. */
export class VfsStore {
  private readonly table: VfsTable;

  constructor(private readonly db: Database) {
    this.table = new VfsTable(db);
  }

  /** The filesystem of a namespace (default `scratch`); cheap: it shares this store's statements. */
  namespace(name: string = DEFAULT_VFS_NAMESPACE): VirtualAgentFs {
    return new VirtualAgentFs(this.db, name, this.table);
  }

  /** Namespaces that hold entries, with their entry counts and file bytes. */
  namespaces(): VfsNamespaceInfo[] {
    return this.table.namespaces.all();
  }

  /** Deletes files still staging since before `before` (a crashed stream); returns how many. */
  sweepStaging(before: number): number {
    return this.table.sweepStaging.run(before).changes;
  }
}
