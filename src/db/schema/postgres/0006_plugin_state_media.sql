-- Plugin state and media metadata, as plugin_state_entries and media_blobs in the global SQLite
-- schema (0002_control_plane.sql): same columns, same keys, same expiry indexes. JSON stays TEXT,
-- byte-exact. Keys compare bytewise ("C"), as SQLite's BINARY does, so lists, prefixes and
-- keyset pages answer in the same order on both.
CREATE TABLE plugin_state_entries (
  plugin_id TEXT COLLATE "C" NOT NULL,
  namespace TEXT COLLATE "C" NOT NULL,
  entry_key TEXT COLLATE "C" NOT NULL,
  value_json TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT,
  PRIMARY KEY (plugin_id, namespace, entry_key)
);

CREATE INDEX plugin_state_entries_expiry ON plugin_state_entries (expires_at)
  WHERE expires_at IS NOT NULL;
