import { PLUGIN_BLOB_COLUMNS } from "./plugin-blob-rows.js";

const ADDRESS = "plugin_id = @pluginId AND namespace = @namespace";
const LIVE = "(expires_at IS NULL OR expires_at > @now)";
// length() of a BLOB reads the record header only, never the bytes (BYTEA's: the varlena header).
const INFO =
  "plugin_id, namespace, entry_key, metadata_json, created_at, updated_at, expires_at, length(blob) AS size_bytes";
// Qualified: in an upsert's SET, PostgreSQL would not know which row's expires_at is meant.
const OLD_LIVE =
  "(plugin_blob_entries.expires_at IS NULL OR plugin_blob_entries.expires_at > @now)";

/**
 * Plugin blob statements shared by `PluginBlobStore` (SQLite) and the PostgreSQL control plane:
 * the same text on both, `@name`s turned into `$n`s on PostgreSQL.
 */
export const PLUGIN_BLOB_SQL = {
  select: `SELECT *, length(blob) AS size_bytes FROM plugin_blob_entries
    WHERE ${ADDRESS} AND entry_key = @key AND ${LIVE}`,
  upsert: `INSERT INTO plugin_blob_entries (${PLUGIN_BLOB_COLUMNS.join(", ")})
      VALUES (@pluginId, @namespace, @key, @metadata, @now, @now, @expiresAt, @data)
    ON CONFLICT (plugin_id, namespace, entry_key) DO UPDATE SET
      metadata_json = excluded.metadata_json, blob = excluded.blob,
      updated_at = excluded.updated_at, expires_at = excluded.expires_at,
      created_at = CASE WHEN ${OLD_LIVE} THEN plugin_blob_entries.created_at
        ELSE excluded.created_at END
    RETURNING ${INFO}`,
  delete: `DELETE FROM plugin_blob_entries WHERE ${ADDRESS} AND entry_key = @key`,
  list: `SELECT ${INFO} FROM plugin_blob_entries WHERE ${ADDRESS} AND entry_key > @after AND ${LIVE}
    ORDER BY entry_key LIMIT @limit`,
} as const;
