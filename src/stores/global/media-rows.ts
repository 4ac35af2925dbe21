import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  expiryOf,
  optionalText,
} from "../checks.js";

/** Below SQLite's default 1e9-byte value limit, and far above any channel's attachment limit. */
export const MAX_MEDIA_BYTES = 512 * 1024 * 1024;
const STREAM_CHUNK_BYTES = 64 * 1024;

export interface MediaBlobRow {
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

export type MediaInfoRow = Omit<MediaBlobRow, "blob">;

export function infoFromRow(row: MediaInfoRow): MediaInfo {
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

export function mediaFromRow(row: MediaBlobRow): Media {
  return { ...infoFromRow(row), data: checkData(row.blob) };
}

export function checkData(data: unknown): Buffer {
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

export function mediaAddress(subdir: unknown, id: unknown) {
  return { subdir: checkText("media subdir", subdir, 256), id: checkText("media id", id) };
}

/** The upsert's parameters for `put`, every argument checked before any statement runs. */
export function putParams(
  subdir: unknown,
  id: unknown,
  data: unknown,
  options: MediaPutOptions,
  clock: Clock,
) {
  const { contentType, ttlMs } = checkOptions(options, ["contentType", "ttlMs"], "MediaStore.put");
  const bytes = checkData(data);
  const now = clock();
  return {
    ...mediaAddress(subdir, id),
    contentType: optionalText("contentType", contentType, 256),
    size: bytes.byteLength,
    now,
    expiresAt: expiryOf(now, ttlMs),
    data: bytes,
  };
}

export function listParams(subdir: unknown, options: MediaListOptions, clock: Clock) {
  const { after = "", limit } = checkOptions(options, ["after", "limit"], "MediaStore.list");
  return {
    subdir: checkText("media subdir", subdir, 256),
    after: after === "" ? after : checkText("after", after),
    limit: checkLimit(limit),
    now: clock(),
  };
}

export function mediaNotFound(subdir: string, id: string): StateError {
  return new StateError("E_NOT_FOUND", `no media ${subdir}/${id}`, { details: { subdir, id } });
}

/**
 * The bytes in 64 KiB chunks, read once on the first pull (neither backend reads part of a
 * value without loading all of it).
 */
export async function* mediaChunks(
  read: () => Media | undefined | Promise<Media | undefined>,
  name: string,
): AsyncGenerator<Buffer> {
  const media = await read();
  if (!media) throw new StateError("E_NOT_FOUND", `no media ${name}`, { details: { name } });
  for (let offset = 0; offset < media.data.byteLength; offset += STREAM_CHUNK_BYTES) {
    yield media.data.subarray(offset, offset + STREAM_CHUNK_BYTES);
  }
}
