import { PLUGIN_STATE_COLUMNS } from "./plugin-state-rows.js";

const COLUMNS = PLUGIN_STATE_COLUMNS.join(", ");
const ADDRESS = "plugin_id = @pluginId AND namespace = @namespace";
const LIVE = "(expires_at IS NULL OR expires_at > @now)";
const LIST = `SELECT * FROM plugin_state_entries WHERE ${ADDRESS} AND entry_key > @after AND ${LIVE}`;
// Qualified: in an upsert's SET, PostgreSQL would not know which row's expires_at is meant.
const OLD_LIVE =
  "(plugin_state_entries.expires_at IS NULL OR plugin_state_entries.expires_at > @now)";

/**
 * Plugin state statements shared by `PluginStateStore` (SQLite) and the PostgreSQL control plane:
 * the same text on both, `@name`s turned into `$n`s on PostgreSQL. Conflict targets are named and
 * `CASE` stands for `iif`, which PostgreSQL lacks.
 */
export const PLUGIN_STATE_SQL = {
  select: `SELECT * FROM plugin_state_entries WHERE ${ADDRESS} AND entry_key = @key AND ${LIVE}`,
  // An expired row is replaced as if new: it keeps no trace of its old created_at.
  upsert: `INSERT INTO plugin_state_entries (${COLUMNS})
      VALUES (@pluginId, @namespace, @key, @json, @now, @now, @expiresAt)
    ON CONFLICT (plugin_id, namespace, entry_key) DO UPDATE SET value_json = excluded.value_json,
      updated_at = excluded.updated_at, expires_at = excluded.expires_at,
      created_at = CASE WHEN ${OLD_LIVE} THEN plugin_state_entries.created_at
        ELSE excluded.created_at END
    RETURNING *`,
  delete: `DELETE FROM plugin_state_entries WHERE ${ADDRESS} AND entry_key = @key`,
  listAll: `${LIST} ORDER BY entry_key LIMIT @limit`,
  listRange: `${LIST} AND entry_key >= @prefix AND entry_key < @upper ORDER BY entry_key LIMIT @limit`,
  // One statement, so concurrent callers serialize on the row: the insert wins for exactly one of
  // them; the others hit the live row, whose update the WHERE turns into a no-op that returns
  // nothing. An expired marker is revived as if it were new.
  markSeen: `INSERT INTO plugin_state_entries (${COLUMNS})
      VALUES (@pluginId, @namespace, @key, 'true', @now, @now, @expiresAt)
    ON CONFLICT (plugin_id, namespace, entry_key) DO UPDATE SET value_json = 'true',
      created_at = excluded.created_at, updated_at = excluded.updated_at,
      expires_at = excluded.expires_at
    WHERE plugin_state_entries.expires_at IS NOT NULL AND plugin_state_entries.expires_at <= @now
    RETURNING 1 AS fresh`,
} as const;
