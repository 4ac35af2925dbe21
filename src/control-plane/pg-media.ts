import { Readable } from "node:stream";
import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
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
  putParams,
} from "../stores/global/media-rows.js";
import { MEDIA_SQL } from "../stores/global/media-sql.js";
import type { ControlPlaneMedia } from "./control-plane.js";
import { pgStatements, query } from "./pg-statements.js";

// A put is one upsert: of racing hosts on one id, the last wins with its bytes and metadata whole.
const SQL = pgStatements("media", {
  ...MEDIA_SQL,
  delete: `${MEDIA_SQL.delete} RETURNING 1 AS gone`,
});

/** Media rows on PostgreSQL: `MediaStore`'s statements and checks. */
export class PgMedia implements ControlPlaneMedia {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async put(
    subdir: string,
    id: string,
    data: Uint8Array,
    options: MediaPutOptions = {},
  ): Promise<MediaInfo> {
    const params = putParams(subdir, id, data, options, this.clock);
    const [row] = await query<MediaInfoRow>(this.pool, SQL.upsert, params);
    return infoFromRow(row as MediaInfoRow);
  }

  async get(subdir: string, id: string): Promise<Media | undefined> {
    const params = { ...mediaAddress(subdir, id), now: this.clock() };
    const [row] = await query<MediaBlobRow>(this.pool, SQL.select, params);
    return row ? mediaFromRow(row) : undefined;
  }

  async info(subdir: string, id: string): Promise<MediaInfo | undefined> {
    const params = { ...mediaAddress(subdir, id), now: this.clock() };
    const [row] = await query<MediaInfoRow>(this.pool, SQL.selectInfo, params);
    return row ? infoFromRow(row) : undefined;
  }

  async stream(subdir: string, id: string): Promise<Readable> {
    const at = mediaAddress(subdir, id);
    const read = () => this.get(at.subdir, at.id);
    return Readable.from(mediaChunks(read, `${at.subdir}/${at.id}`), { objectMode: false });
  }

  async delete(subdir: string, id: string): Promise<boolean> {
    return (await query(this.pool, SQL.delete, mediaAddress(subdir, id))).length > 0;
  }

  async list(subdir: string, options: MediaListOptions = {}): Promise<MediaInfo[]> {
    const rows = await query<MediaInfoRow>(
      this.pool,
      SQL.list,
      listParams(subdir, options, this.clock),
    );
    return rows.map(infoFromRow);
  }
}
