-- vfs_entries rebuilt with the same columns and two changes SQLite cannot make in place:
--
-- * `id` is AUTOINCREMENT: an id is never used twice. Without it SQLite gives a new row the
--   largest rowid + 1, which is the id of a file just replaced or removed when that file was the
--   newest entry; a fingerprint (id, path, kind, size, mtime) taken before a same-size rewrite in
--   the same millisecond then matched the one taken after it.
-- * The kind CHECK compares with `=` instead of `IN (…)`: for an IN list of three values SQLite
--   builds a temporary index on every row it checks, which cost about a tenth of inserting a
--   small file.
--
-- Everything else is as in 0003 (see there for the columns and indexes). Ids are kept, so chunks
-- still point at their entries. Foreign keys are on and cannot be switched off inside the
-- migration's transaction, so dropping the old entries table would cascade to the chunks that
-- reference it: the chunks move to a new table (pointing at the new entries table) first.
CREATE TABLE vfs_entries_next (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace TEXT NOT NULL,
  path TEXT NOT NULL,
  parent TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind = 'file' OR kind = 'directory' OR kind = 'staging'),
  size_bytes INTEGER NOT NULL DEFAULT 0 CHECK (size_bytes >= 0),
  chunk_count INTEGER NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
  metadata_json TEXT NOT NULL DEFAULT '{}',
  updated_at INTEGER NOT NULL,
  content_blob BLOB,
  UNIQUE (namespace, path),
  CHECK (kind <> 'directory' OR (content_blob IS NULL AND chunk_count = 0 AND size_bytes = 0))
) STRICT;

INSERT INTO vfs_entries_next (id, namespace, path, parent, kind, size_bytes, chunk_count, metadata_json, updated_at, content_blob)
  SELECT id, namespace, path, parent, kind, size_bytes, chunk_count, metadata_json, updated_at, content_blob
  FROM vfs_entries ORDER BY id;

CREATE TABLE vfs_chunks_next (
  entry_id INTEGER NOT NULL REFERENCES vfs_entries_next (id) ON DELETE CASCADE,
  chunk_index INTEGER NOT NULL CHECK (chunk_index >= 0),
  data BLOB NOT NULL,
  PRIMARY KEY (entry_id, chunk_index)
) STRICT;

INSERT INTO vfs_chunks_next (entry_id, chunk_index, data)
  SELECT entry_id, chunk_index, data FROM vfs_chunks ORDER BY entry_id, chunk_index;

DROP TABLE vfs_chunks;
DROP TABLE vfs_entries;
-- Renaming a table also renames it in the foreign keys that point at it.
ALTER TABLE vfs_entries_next RENAME TO vfs_entries;
ALTER TABLE vfs_chunks_next RENAME TO vfs_chunks;

CREATE INDEX vfs_entries_parent ON vfs_entries (namespace, parent, path);
CREATE INDEX vfs_entries_staging ON vfs_entries (updated_at) WHERE kind = 'staging';
