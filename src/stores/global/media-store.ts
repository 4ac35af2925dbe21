import { tmpdir } from "node:os";
import { Readable } from "node:stream";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions, checkText } from "../checks.js";
import {
  infoFromRow,
  listParams,
  type Media,
  type MediaBlobRow,
  type MediaInfo,
  type MediaInfoRow,
  type MediaListOptions,
  type MediaPutOptions,
  mediaAddress,
  mediaChunks,
  mediaFromRow,
  mediaNotFound,
  putParams,
} from "./media-rows.js";
import { MEDIA_SQL } from "./media-sql.js";
import { withTempFile } from "./media-temp-file.js";

export {
  MAX_MEDIA_BYTES,
  MEDIA_BLOB_COLUMNS,
  type Media,
  type MediaInfo,
  type MediaListOptions,
  type MediaPutOptions,
} from "./media-rows.js";

export interface MediaStoreOptions {
  clock?: Clock;
  /** Parent of the private directories `withMaterialized` creates (default: the OS temp dir). */
  tempDir?: string;
}

/**
 * Gateway media attachments as rows of the global database, by `(subdir, id)`. Callers that need
 * a path (channel senders, sandbox staging) borrow a private temp file with `withMaterialized`.
 */
export class MediaStore {
  private readonly clock: Clock;
  private readonly tempDir: string;
  private readonly selectOne: SqlStatement<MediaBlobRow>;
  private readonly selectInfo: SqlStatement<MediaInfoRow>;
  private readonly upsert: SqlStatement<MediaInfoRow>;
  private readonly deleteOne: SqlStatement;
  private readonly listPage: SqlStatement<MediaInfoRow>;

  constructor(db: Database, options: MediaStoreOptions = {}) {
    const checked = checkOptions(options, ["clock", "tempDir"], "MediaStore");
    this.clock = checked.clock ?? Date.now;
    this.tempDir = checked.tempDir === undefined ? tmpdir() : checkText("tempDir", checked.tempDir);
    this.selectOne = db.prepare(MEDIA_SQL.select);
    this.selectInfo = db.prepare(MEDIA_SQL.selectInfo);
    this.upsert = db.prepare(MEDIA_SQL.upsert);
    this.deleteOne = db.prepare(MEDIA_SQL.delete);
    this.listPage = db.prepare(MEDIA_SQL.list);
  }

  put(subdir: string, id: string, data: Uint8Array, options: MediaPutOptions = {}): MediaInfo {
    const row = this.upsert.get(putParams(subdir, id, data, options, this.clock));
    return infoFromRow(row as MediaInfoRow);
  }

  get(subdir: string, id: string): Media | undefined {
    const row = this.selectOne.get({ ...mediaAddress(subdir, id), now: this.clock() });
    return row ? mediaFromRow(row) : undefined;
  }

  /** The row's metadata, without reading its bytes. */
  info(subdir: string, id: string): MediaInfo | undefined {
    const row = this.selectInfo.get({ ...mediaAddress(subdir, id), now: this.clock() });
    return row ? infoFromRow(row) : undefined;
  }

  /**
   * The bytes as a stream of 64 KiB chunks, for piping to a socket or file. The row is read once,
   * on the first pull (SQLite cannot read part of a value without loading all of it).
   */
  stream(subdir: string, id: string): Readable {
    const at = mediaAddress(subdir, id);
    const read = () => this.get(at.subdir, at.id);
    return Readable.from(mediaChunks(read, `${at.subdir}/${at.id}`), { objectMode: false });
  }

  delete(subdir: string, id: string): boolean {
    return this.deleteOne.run(mediaAddress(subdir, id)).changes > 0;
  }

  /** Live media of one subdir, ordered by id, without their bytes. */
  list(subdir: string, options: MediaListOptions = {}): MediaInfo[] {
    return this.listPage.all(listParams(subdir, options, this.clock)).map(infoFromRow);
  }

  /**
   * Runs `fn` with the path of a private copy of the media (a 0600 file in a fresh 0700 directory)
   * and removes it afterwards, also when `fn` throws or its promise rejects. E_NOT_FOUND when the
   * row is missing or expired.
   */
  withMaterialized<T>(subdir: string, id: string, fn: (path: string) => T): T {
    if (typeof fn !== "function") throw new TypeError("Expected a function for withMaterialized");
    const media = this.get(subdir, id);
    if (!media) throw mediaNotFound(subdir, id);
    return withTempFile(this.tempDir, media.id, media.data, fn);
  }
}
