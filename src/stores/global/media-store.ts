import { tmpdir } from "node:os";
import { Readable } from "node:stream";
import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  expiryOf,
  optionalText,
} from "../checks.js";
import { withTempFile } from "./media-temp-file.js";

/** Below SQLite's default 1e9-byte value limit, and far above any channel's attachment limit. */
export const MAX_MEDIA_BYTES = 512 * 1024 * 1024;
const STREAM_CHUNK_BYTES = 64 * 1024;

interface MediaBlobRow {
  subdir: string;
  id: string;
  content_type: string | null;
  size_bytes: number;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  blob: Uint8Array;
}

export const MEDIA_BLOB_COLUMNS = columnsOf<MediaBlobRow>()(
  "subdir",
  "id",
  "content_type",
  "size_bytes",
  "created_at",
  "updated_at",
  "expires_at",
  "blob",
);

/** A media row without its bytes. */
export interface MediaInfo {
  subdir: string;
  id: string;
  contentType: string | null;
  sizeBytes: number;
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
}

export interface Media extends MediaInfo {
  data: Buffer;
}

export interface MediaPutOptions {
  contentType?: string;
  /** Time to live in ms. Default: forever. */
  ttlMs?: number;
}

export interface MediaListOptions {
  after?: string;
  limit?: number;
}

export interface MediaStoreOptions {
  clock?: Clock;
  /** Parent of the private directories `withMaterialized` creates (default: the OS temp dir). */
  tempDir?: string;
}

type InfoRow = Omit<MediaBlobRow, "blob">;

const INFO = "subdir, id, content_type, size_bytes, created_at, updated_at, expires_at";
const LIVE = "(expires_at IS NULL OR expires_at > @now)";

function infoFromRow(row: InfoRow): MediaInfo {
  return {
    subdir: row.subdir,
    id: row.id,
    contentType: row.content_type,
    sizeBytes: row.size_bytes,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at,
  };
}

function checkData(data: unknown): Buffer {
  if (!(data instanceof Uint8Array)) {
    throw new StateError("E_INVALID_ARGUMENT", "media data must be a Buffer or Uint8Array");
  }
  if (data.byteLength > MAX_MEDIA_BYTES) {
    throw new StateError(
      "E_TOO_LARGE",
      `media is ${data.byteLength} bytes; the limit is ${MAX_MEDIA_BYTES}`,
      { details: { bytes: data.byteLength, limit: MAX_MEDIA_BYTES } },
    );
  }
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Gateway media attachments as rows of the global database, by `(subdir, id)`. Callers that need
 * a path (channel senders, sandbox staging) borrow a private temp file with `withMaterialized`.
 */
export class MediaStore {
  private readonly clock: Clock;
  private readonly tempDir: string;
  private readonly selectOne: SqlStatement<MediaBlobRow>;
  private readonly selectInfo: SqlStatement<InfoRow>;
  private readonly upsert: SqlStatement<InfoRow>;
  private readonly deleteOne: SqlStatement;
  private readonly listPage: SqlStatement<InfoRow>;

  constructor(db: Database, options: MediaStoreOptions = {}) {
    const checked = checkOptions(options, ["clock", "tempDir"], "MediaStore");
    this.clock = checked.clock ?? Date.now;
    this.tempDir = checked.tempDir === undefined ? tmpdir() : checkText("tempDir", checked.tempDir);
    const key = "subdir = @subdir AND id = @id";
    this.selectOne = db.prepare(`SELECT * FROM media_blobs WHERE ${key} AND ${LIVE}`);
    this.selectInfo = db.prepare(`SELECT ${INFO} FROM media_blobs WHERE ${key} AND ${LIVE}`);
    this.upsert = db.prepare(
      `INSERT INTO media_blobs (${MEDIA_BLOB_COLUMNS.join(", ")})
       VALUES (@subdir, @id, @contentType, @size, @now, @now, @expiresAt, @data)
       ON CONFLICT DO UPDATE SET content_type = excluded.content_type, size_bytes = excluded.size_bytes,
         blob = excluded.blob, updated_at = excluded.updated_at, expires_at = excluded.expires_at,
         created_at = iif(expires_at IS NULL OR expires_at > @now, created_at, excluded.created_at)
       RETURNING ${INFO}`,
    );
    this.deleteOne = db.prepare(`DELETE FROM media_blobs WHERE ${key}`);
    this.listPage = db.prepare(
      `SELECT ${INFO} FROM media_blobs WHERE subdir = @subdir AND id > @after AND ${LIVE}
       ORDER BY id LIMIT @limit`,
    );
  }

  put(subdir: string, id: string, data: Uint8Array, options: MediaPutOptions = {}): MediaInfo {
    const { contentType, ttlMs } = checkOptions(
      options,
      ["contentType", "ttlMs"],
      "MediaStore.put",
    );
    const bytes = checkData(data);
    const now = this.clock();
    const row = this.upsert.get({
      ...address(subdir, id),
      contentType: optionalText("contentType", contentType, 256),
      size: bytes.byteLength,
      now,
      expiresAt: expiryOf(now, ttlMs),
      data: bytes,
    });
    return infoFromRow(row as InfoRow);
  }

  get(subdir: string, id: string): Media | undefined {
    const row = this.selectOne.get({ ...address(subdir, id), now: this.clock() });
    if (!row) return undefined;
    return { ...infoFromRow(row), data: checkData(row.blob) };
  }

  /** The row's metadata, without reading its bytes. */
  info(subdir: string, id: string): MediaInfo | undefined {
    const row = this.selectInfo.get({ ...address(subdir, id), now: this.clock() });
    return row ? infoFromRow(row) : undefined;
  }

  /**
   * The bytes as a stream of 64 KiB chunks, for piping to a socket or file. The row is read once,
   * on the first pull (SQLite cannot read part of a value without loading all of it).
   */
  stream(subdir: string, id: string): Readable {
    const at = address(subdir, id);
    const read = () => this.get(at.subdir, at.id);
    return Readable.from(chunks(read, `${at.subdir}/${at.id}`), { objectMode: false });
  }

  delete(subdir: string, id: string): boolean {
    return this.deleteOne.run(address(subdir, id)).changes > 0;
  }

  /** Live media of one subdir, ordered by id, without their bytes. */
  list(subdir: string, options: MediaListOptions = {}): MediaInfo[] {
    const { after = "", limit } = checkOptions(options, ["after", "limit"], "MediaStore.list");
    return this.listPage
      .all({
        subdir: checkText("media subdir", subdir, 256),
        after: after === "" ? after : checkText("after", after),
        limit: checkLimit(limit),
        now: this.clock(),
      })
      .map(infoFromRow);
  }

  /**
   * Runs `fn` with the path of a private copy of the media (a 0600 file in a fresh 0700 directory)
   * and removes it afterwards, also when `fn` throws or its promise rejects. E_NOT_FOUND when the
   * row is missing or expired.
   */
  withMaterialized<T>(subdir: string, id: string, fn: (path: string) => T): T {
    if (typeof fn !== "function") throw new TypeError("Expected a function for withMaterialized");
    const media = this.get(subdir, id);
    if (!media) throw notFound(subdir, id);
    return withTempFile(this.tempDir, media.id, media.data, fn);
  }
}

function address(subdir: unknown, id: unknown) {
  return { subdir: checkText("media subdir", subdir, 256), id: checkText("media id", id) };
}

function notFound(subdir: string, id: string): StateError {
  return new StateError("E_NOT_FOUND", `no media ${subdir}/${id}`, { details: { subdir, id } });
}

function* chunks(read: () => Media | undefined, name: string): Generator<Buffer> {
  const media = read();
  if (!media) throw new StateError("E_NOT_FOUND", `no media ${name}`, { details: { name } });
  for (let offset = 0; offset < media.data.byteLength; offset += STREAM_CHUNK_BYTES) {
    yield media.data.subarray(offset, offset + STREAM_CHUNK_BYTES);
  }
}
