import { MEDIA_BLOB_COLUMNS } from "./media-rows.js";

const INFO = "subdir, id, content_type, size_bytes, created_at, updated_at, expires_at";
const ADDRESS = "subdir = @subdir AND id = @id";
const LIVE = "(expires_at IS NULL OR expires_at > @now)";
// Qualified: in an upsert's SET, PostgreSQL would not know which row's expires_at is meant.
const OLD_LIVE = "(media_blobs.expires_at IS NULL OR media_blobs.expires_at > @now)";

/**
 * Media statements shared by `MediaStore` (SQLite) and the PostgreSQL control plane: the same text
 * on both, `@name`s turned into `$n`s on PostgreSQL. The conflict target is named and `CASE`
 * stands for `iif`, which PostgreSQL lacks.
 */
export const MEDIA_SQL = {
  select: `SELECT * FROM media_blobs WHERE ${ADDRESS} AND ${LIVE}`,
  selectInfo: `SELECT ${INFO} FROM media_blobs WHERE ${ADDRESS} AND ${LIVE}`,
  // An expired row is replaced as if new: it keeps no trace of its old created_at.
  upsert: `INSERT INTO media_blobs (${MEDIA_BLOB_COLUMNS.join(", ")})
      VALUES (@subdir, @id, @contentType, @size, @now, @now, @expiresAt, @data)
    ON CONFLICT (subdir, id) DO UPDATE SET content_type = excluded.content_type,
      size_bytes = excluded.size_bytes, blob = excluded.blob, updated_at = excluded.updated_at,
      expires_at = excluded.expires_at,
      created_at = CASE WHEN ${OLD_LIVE} THEN media_blobs.created_at ELSE excluded.created_at END
    RETURNING ${INFO}`,
  delete: `DELETE FROM media_blobs WHERE ${ADDRESS}`,
  list: `SELECT ${INFO} FROM media_blobs WHERE subdir = @subdir AND id > @after AND ${LIVE}
    ORDER BY id LIMIT @limit`,
} as const;
