-- Plugin state, plugin blobs and media, as plugin_state_entries, plugin_blob_entries and media_blobs
-- in the global SQLite schema (0002_control_plane.sql): same columns, keys and expiry indexes. JSON stays TEXT,
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

-- Plugin blobs: the bytes as BYTEA (a BLOB on SQLite); metadata stays TEXT, byte-exact.
CREATE TABLE plugin_blob_entries (
  plugin_id TEXT COLLATE "C" NOT NULL,
  namespace TEXT COLLATE "C" NOT NULL,
  entry_key TEXT COLLATE "C" NOT NULL,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT,
  blob BYTEA NOT NULL,
  PRIMARY KEY (plugin_id, namespace, entry_key)
);

CREATE INDEX plugin_blob_entries_expiry ON plugin_blob_entries (expires_at)
  WHERE expires_at IS NOT NULL;

-- A media row carries its bytes (BYTEA, as the BLOB it is on SQLite), so every host reads the
-- same attachment; MediaStore's 512 MiB limit keeps it under PostgreSQL's 1 GB per value.
CREATE TABLE media_blobs (
  subdir TEXT COLLATE "C" NOT NULL,
  id TEXT COLLATE "C" NOT NULL,
  content_type TEXT,
  size_bytes BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT,
  blob BYTEA NOT NULL,
  PRIMARY KEY (subdir, id)
);

CREATE INDEX media_blobs_expiry ON media_blobs (expires_at) WHERE expires_at IS NOT NULL;
