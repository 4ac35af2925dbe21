import { constants } from "node:buffer";
import { StateError } from "../../db/errors.js";
import {
  type ByteSource,
  checkFileSize,
  rechunk,
  sliceChunks,
  toBuffer,
  VFS_CHUNK_BYTES,
} from "../../vfs/chunks.js";
import { type VfsErrorWhere, vfsChangedError } from "../../vfs/errors.js";
import type { VfsFileHead, VfsHead, VfsTable } from "./vfs-table.js";

const EMPTY = Buffer.alloc(0);

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : toBuffer(data);
}

/** A file streamed into hidden rows, waiting to be committed under a path (or discarded). */
export class StagedFile {
  constructor(
    readonly namespace: string,
    readonly size: number,
    /** @internal The hidden entry holding the chunks. */
    readonly entryId: number,
  ) {}
}

/**
 * File bytes in the VFS tables: small files inline in their entry row, large ones in 256 KiB
 * chunks. Callers hold the transaction; this class only reads and writes rows.
 */
export class VfsContent {
  constructor(
    private readonly table: VfsTable,
    private readonly namespace: string,
  ) {}

  /** Inserts a new file entry with `data` and returns its id. */
  insert(path: string, parent: string, data: Buffer, metadataJson: string, now: number): number {
    checkFileSize(data.length, path);
    const inline = data.length <= VFS_CHUNK_BYTES;
    const chunks = inline ? 0 : Math.ceil(data.length / VFS_CHUNK_BYTES);
    const id = this.table.add(this.namespace, path, parent, "file", now, {
      size: data.length,
      chunks,
      metadataJson,
      inline: inline ? data : null,
    });
    if (!inline) this.writeChunks(id, 0, EMPTY, data);
    return id;
  }

  /**
   * Creates a small file in one statement when its parent is a directory and its path is free.
   * False, with nothing written, for a large file or any other case (the caller then checks and
   * replaces in a transaction). One statement is atomic by itself, so inside a batch it needs no
   * savepoint of its own.
   */
  create(path: string, parent: string, data: Buffer, metadataJson: string, now: number): boolean {
    if (data.length > VFS_CHUNK_BYTES) return false;
    return this.table.addIfFree(this.namespace, path, parent, now, { metadataJson, inline: data });
  }

  /** Appends to an existing file, filling its last chunk first; returns the new size. */
  append(head: VfsHead, data: Buffer, now: number): number {
    const size = head.size_bytes + data.length;
    checkFileSize(size, head.path);
    if (data.length === 0) return head.size_bytes;
    const where = this.where("appendFile", head);
    if (head.chunk_count === 0) {
      const old = this.inline(head, where);
      if (size <= VFS_CHUNK_BYTES) {
        this.table.setContent.run(size, 0, Buffer.concat([old, data]), now, head.id);
      } else {
        const chunks = this.writeChunks(head.id, 0, old, data);
        this.table.setContent.run(size, chunks, null, now, head.id);
      }
      return size;
    }
    const last = head.chunk_count - 1;
    const tail = this.table.chunk.get(head.id, last, head.size_bytes);
    if (!tail) throw vfsChangedError(where);
    // A full last chunk stays as it is; a partial one is rewritten with the first new bytes.
    const full = tail.data.length === VFS_CHUNK_BYTES;
    const start = full ? last + 1 : last;
    const added = this.writeChunks(head.id, start, full ? EMPTY : tail.data, data);
    this.table.setContent.run(size, start + added, null, now, head.id);
    return size;
  }

  /** The file's bytes chunk by chunk; memory stays at one chunk however large the file. */
  *chunks(head: VfsHead | VfsFileHead, op: string): IterableIterator<Buffer> {
    const where = this.where(op, head);
    if (head.chunk_count === 0) {
      const data = this.inline(head, where);
      if (data.length > 0) yield data;
      return;
    }
    for (let index = 0; index < head.chunk_count; index++) {
      const row = this.table.chunk.get(head.id, index, head.size_bytes);
      if (!row) throw vfsChangedError(where);
      yield asBuffer(row.data);
    }
  }

  /** The whole file in one Buffer (allocated once, not concatenated). */
  read(head: VfsHead | VfsFileHead, op: string): Buffer {
    if (head.size_bytes > constants.MAX_LENGTH) {
      throw new StateError(
        "E_TOO_LARGE",
        `vfs ${op} ${JSON.stringify(head.path)}: ${head.size_bytes} bytes do not fit in one Buffer; read it with readChunks()`,
        { details: { path: head.path, size: head.size_bytes } },
      );
    }
    if (head.chunk_count === 0) return this.inline(head, this.where(op, head));
    const out = Buffer.allocUnsafe(head.size_bytes);
    let offset = 0;
    for (const chunk of this.chunks(head, op)) offset += chunk.copy(out, offset);
    return out;
  }

  /** Streams `source` into a hidden staging entry, one short write per chunk. */
  async stage(source: ByteSource, path: string): Promise<StagedFile> {
    const id = this.table.addStaging(this.namespace, Date.now());
    try {
      let size = 0;
      let index = 0;
      for await (const chunk of rechunk(source)) {
        size += chunk.length;
        checkFileSize(size, path);
        this.table.putChunk.run(id, index++, chunk);
      }
      this.table.setContent.run(size, index, null, Date.now(), id);
      return new StagedFile(this.namespace, size, id);
    } catch (error) {
      this.table.deleteEntry.run(id);
      throw error;
    }
  }

  /** Turns a staged entry into the file at `path`: small files move inline. In a transaction. */
  promote(
    staged: StagedFile,
    path: string,
    parent: string,
    metadataJson: string,
    now: number,
  ): void {
    if (staged.namespace !== this.namespace) {
      throw new TypeError(`Expected a file staged in namespace "${this.namespace}"`);
    }
    if (staged.size <= VFS_CHUNK_BYTES) {
      const first =
        staged.size === 0 ? undefined : this.table.chunk.get(staged.entryId, 0, staged.size);
      this.table.setContent.run(staged.size, 0, first?.data ?? EMPTY, now, staged.entryId);
      this.table.deleteChunks.run(staged.entryId);
    }
    if (this.table.promote.run(path, parent, metadataJson, now, staged.entryId).changes === 0) {
      throw new StateError(
        "E_CONFLICT",
        `vfs writeFile ${JSON.stringify(path)}: the staged content is gone (namespace "${this.namespace}" was cleared or its staging rows swept)`,
        { details: { namespace: this.namespace, path } },
      );
    }
  }

  discard(staged: StagedFile): void {
    this.table.deleteEntry.run(staged.entryId);
  }

  /** A small file's bytes: from the head when the read fetched them, else by a query. */
  private inline(head: VfsHead | VfsFileHead, where: VfsErrorWhere): Buffer {
    if ("content_blob" in head && head.content_blob) return asBuffer(head.content_blob);
    const row = this.table.content.get(head.id, head.size_bytes);
    if (!row) throw vfsChangedError(where);
    return row.content_blob ? asBuffer(row.content_blob) : EMPTY;
  }

  private where(op: string, head: VfsHead): VfsErrorWhere {
    return { namespace: this.namespace, op, path: head.path };
  }

  /** Writes `prefix + data` as chunks from `startIndex` on; returns how many chunks it wrote. */
  private writeChunks(id: number, startIndex: number, prefix: Uint8Array, data: Buffer): number {
    let index = startIndex;
    for (const chunk of sliceChunks(prefix, data)) this.table.putChunk.run(id, index++, chunk);
    return index - startIndex;
  }
}
