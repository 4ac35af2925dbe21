import { randomBytes } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { descendantRange } from "../../vfs/path.js";

export type VfsKind = "file" | "directory";

/** A row of `vfs_entries`, checked against the committed schema by a test. */
export interface VfsEntryRow {
  id: number;
  namespace: string;
  path: string;
  parent: string;
  kind: VfsKind | "staging";
  size_bytes: number;
  chunk_count: number;
  metadata_json: string;
  updated_at: number;
  content_blob: Uint8Array | null;
}

export interface VfsChunkRow {
  entry_id: number;
  chunk_index: number;
  data: Uint8Array;
}

export const VFS_ENTRY_COLUMNS = columnsOf<VfsEntryRow>()(
  "id",
  "namespace",
  "path",
  "parent",
  "kind",
  "size_bytes",
  "chunk_count",
  "metadata_json",
  "updated_at",
  "content_blob",
);
export const VFS_CHUNK_COLUMNS = columnsOf<VfsChunkRow>()("entry_id", "chunk_index", "data");

/** An entry without its content: what lookups and listings read. */
export interface VfsHead {
  id: number;
  path: string;
  kind: VfsKind;
  size_bytes: number;
  chunk_count: number;
  metadata_json: string;
  updated_at: number;
}

/** A head with the inline bytes of a small file (NULL for large files and directories). */
export interface VfsFileHead extends VfsHead {
  content_blob: Uint8Array | null;
}

const HEAD = "id, path, kind, size_bytes, chunk_count, metadata_json, updated_at";
const STAGING_PARENT = "\u0000staging";

/**
 * The statements of the scratch filesystem, prepared once per connection, and the row-level
 * operations VirtualAgentFs composes into transactions. No semantics live here.
 */
export class VfsTable {
  readonly head: SqlStatement<VfsHead>;
  readonly fileHead: SqlStatement<VfsFileHead>;
  readonly children: SqlStatement<VfsHead>;
  readonly descendants: SqlStatement<VfsHead>;
  readonly hasChild: SqlStatement<{ found: number }>;
  readonly insert: SqlStatement;
  readonly insertIfFree: SqlStatement;
  readonly setContent: SqlStatement;
  readonly content: SqlStatement<{ content_blob: Uint8Array | null }>;
  readonly chunk: SqlStatement<{ data: Uint8Array }>;
  readonly putChunk: SqlStatement;
  readonly deleteChunks: SqlStatement;
  readonly deleteEntry: SqlStatement;
  readonly deleteRange: SqlStatement;
  readonly moveEntry: SqlStatement;
  readonly moveRange: SqlStatement;
  readonly copyEntry: SqlStatement;
  readonly copyChunks: SqlStatement;
  readonly promote: SqlStatement;
  readonly sweepStaging: SqlStatement;
  readonly clear: SqlStatement;
  readonly namespaces: SqlStatement<{ namespace: string; entries: number; bytes: number }>;

  constructor(db: Database) {
    const inRange = "namespace = ? AND path >= ? AND path < ?";
    this.head = db.prepare(`SELECT ${HEAD} FROM vfs_entries WHERE namespace = ? AND path = ?`);
    // Reads fetch a small file's bytes with its head: one query per small-file read.
    this.fileHead = db.prepare(
      `SELECT ${HEAD}, content_blob FROM vfs_entries WHERE namespace = ? AND path = ?`,
    );
    this.children = db.prepare(
      `SELECT ${HEAD} FROM vfs_entries WHERE namespace = ? AND parent = ? ORDER BY path`,
    );
    this.descendants = db.prepare(`SELECT ${HEAD} FROM vfs_entries WHERE ${inRange} ORDER BY path`);
    this.hasChild = db.prepare(
      "SELECT EXISTS (SELECT 1 FROM vfs_entries WHERE namespace = ? AND parent = ?) AS found",
    );
    this.insert = db.prepare(
      `INSERT INTO vfs_entries (namespace, path, parent, kind, size_bytes, chunk_count, metadata_json, updated_at, content_blob)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // A new small file in one statement, only where a plain write needs no other step: the parent
    // is the root or a directory and nothing is at the path. Otherwise `kind` is NULL or the path
    // is taken, and OR IGNORE skips the row (0 changes, nothing written). VALUES, not SELECT: an
    // INSERT … SELECT that reads its own table first copies the row, blob and all, to a temp table.
    this.insertIfFree = db.prepare(
      `INSERT OR IGNORE INTO vfs_entries (namespace, path, parent, kind, size_bytes, chunk_count, metadata_json, updated_at, content_blob)
       VALUES (?, ?, ?, iif(? = '/' OR EXISTS (SELECT 1 FROM vfs_entries WHERE namespace = ? AND path = ? AND kind = 'directory'), 'file', NULL), ?, 0, ?, ?, ?)`,
    );
    this.setContent = db.prepare(
      "UPDATE vfs_entries SET size_bytes = ?, chunk_count = ?, content_blob = ?, updated_at = ? WHERE id = ?",
    );
    // The size guards below make a reader notice an append or rewrite between two chunk reads.
    this.content = db.prepare(
      "SELECT content_blob FROM vfs_entries WHERE id = ? AND size_bytes = ? AND kind <> 'directory'",
    );
    this.chunk = db.prepare(
      `SELECT c.data FROM vfs_chunks c JOIN vfs_entries e ON e.id = c.entry_id
       WHERE c.entry_id = ? AND c.chunk_index = ? AND e.size_bytes = ?`,
    );
    this.putChunk = db.prepare(
      `INSERT INTO vfs_chunks (entry_id, chunk_index, data) VALUES (?, ?, ?)
       ON CONFLICT (entry_id, chunk_index) DO UPDATE SET data = excluded.data`,
    );
    this.deleteChunks = db.prepare("DELETE FROM vfs_chunks WHERE entry_id = ?");
    this.deleteEntry = db.prepare("DELETE FROM vfs_entries WHERE id = ?");
    this.deleteRange = db.prepare(`DELETE FROM vfs_entries WHERE ${inRange}`);
    this.moveEntry = db.prepare(
      "UPDATE vfs_entries SET path = ?, parent = ?, updated_at = ? WHERE id = ?",
    );
    // Every descendant's path and parent start with the old prefix; swap it for the new one.
    this.moveRange = db.prepare(
      `UPDATE vfs_entries SET path = ? || substr(path, length(?) + 1), parent = ? || substr(parent, length(?) + 1)
       WHERE namespace = ? AND path >= ? AND path < ?`,
    );
    this.copyEntry = db.prepare(
      `INSERT INTO vfs_entries (namespace, path, parent, kind, size_bytes, chunk_count, metadata_json, updated_at, content_blob)
       SELECT namespace, ?, ?, kind, size_bytes, chunk_count, metadata_json, ?, content_blob FROM vfs_entries WHERE id = ?`,
    );
    this.copyChunks = db.prepare(
      "INSERT INTO vfs_chunks (entry_id, chunk_index, data) SELECT ?, chunk_index, data FROM vfs_chunks WHERE entry_id = ?",
    );
    this.promote = db.prepare(
      `UPDATE vfs_entries SET path = ?, parent = ?, kind = 'file', metadata_json = ?, updated_at = ?
       WHERE id = ? AND kind = 'staging'`,
    );
    this.sweepStaging = db.prepare(
      "DELETE FROM vfs_entries WHERE kind = 'staging' AND updated_at < ?",
    );
    this.clear = db.prepare("DELETE FROM vfs_entries WHERE namespace = ? AND kind <> 'staging'");
    this.namespaces = db.prepare(
      `SELECT namespace, count(*) AS entries, coalesce(sum(size_bytes), 0) AS bytes
       FROM vfs_entries WHERE kind <> 'staging' GROUP BY namespace ORDER BY namespace`,
    );
  }

  /** Inserts an entry and returns its id. */
  add(
    namespace: string,
    path: string,
    parent: string,
    kind: VfsKind,
    now: number,
    file?: { size: number; chunks: number; metadataJson: string; inline: Uint8Array | null },
  ): number {
    return Number(
      this.insert.run(
        namespace,
        path,
        parent,
        kind,
        file?.size ?? 0,
        file?.chunks ?? 0,
        file?.metadataJson ?? "{}",
        now,
        file ? file.inline : null,
      ).lastInsertRowid,
    );
  }

  /** Inserts a small file if its parent is a directory and its path is free; false if not. */
  addIfFree(
    namespace: string,
    path: string,
    parent: string,
    now: number,
    file: { metadataJson: string; inline: Uint8Array },
  ): boolean {
    const { metadataJson, inline } = file;
    return (
      this.insertIfFree.run(
        namespace,
        path,
        parent,
        parent,
        namespace,
        parent,
        inline.length,
        metadataJson,
        now,
        inline,
      ).changes === 1
    );
  }

  /** A hidden entry for a file being streamed in; see the schema. */
  addStaging(namespace: string, now: number): number {
    const path = `${STAGING_PARENT}/${randomBytes(12).toString("hex")}`;
    return Number(
      this.insert.run(namespace, path, STAGING_PARENT, "staging", 0, 0, "{}", now, null)
        .lastInsertRowid,
    );
  }

  listDescendants(namespace: string, path: string): VfsHead[] {
    return this.descendants.all(namespace, ...descendantRange(path));
  }

  removeDescendants(namespace: string, path: string): number {
    return this.deleteRange.run(namespace, ...descendantRange(path)).changes;
  }

  moveDescendants(namespace: string, from: string, to: string): number {
    return this.moveRange.run(to, from, to, from, namespace, ...descendantRange(from)).changes;
  }
}
