-- Scratch filesystem, artifacts and caches of an agent. Contents are BLOBs, never base64 JSON;
-- metadata_json stays small and readable with the sqlite3 shell.

-- The scratch filesystem (VirtualAgentFs), one tree per namespace. `path` is canonical (see
-- src/vfs/path.ts): '/a/b', NFC, no '.', '..', '//' or trailing '/'. The root '/' is implicit.
-- `parent` makes readdir an index range instead of a scan of every descendant.
-- A file of at most 256 KiB keeps its bytes in `content_blob` (one row per small file); a larger
-- one has `content_blob` NULL and `chunk_count` rows in vfs_chunks, so a 100 MB file never needs
-- a 100 MB row or a 100 MB buffer. Chunks hang off the entry's `id`, not its path: a rename
-- rewrites one row, not the file's bytes.
-- kind 'staging' marks a file being streamed in: it becomes a 'file' by one UPDATE when complete,
-- and its path ('\0staging/…') is outside every canonical path range, so nothing lists it.
-- content_blob is the last column: SQLite reads the columns before a large value without walking
-- its overflow pages.
CREATE TABLE vfs_entries (
  id INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  path TEXT NOT NULL,
  parent TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('file', 'directory', 'staging')),
  size_bytes INTEGER NOT NULL DEFAULT 0 CHECK (size_bytes >= 0),
  chunk_count INTEGER NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
  metadata_json TEXT NOT NULL DEFAULT '{}',
  updated_at INTEGER NOT NULL,
  content_blob BLOB,
  UNIQUE (namespace, path),
  CHECK (kind <> 'directory' OR (content_blob IS NULL AND chunk_count = 0 AND size_bytes = 0))
) STRICT;

CREATE INDEX vfs_entries_parent ON vfs_entries (namespace, parent, path);
CREATE INDEX vfs_entries_staging ON vfs_entries (updated_at) WHERE kind = 'staging';

-- Chunk size 256 KiB (src/vfs/chunks.ts): measured on 100 MB, reads are within ~10% of 1 MiB
-- chunks (per-row cost is amortized over 64 pages of 4 KiB) while a streamed read or write holds
-- a quarter of the memory and an append rewrites at most 256 KiB of its last chunk.
CREATE TABLE vfs_chunks (
  entry_id INTEGER NOT NULL REFERENCES vfs_entries (id) ON DELETE CASCADE,
  chunk_index INTEGER NOT NULL CHECK (chunk_index >= 0),
  data BLOB NOT NULL,
  PRIMARY KEY (entry_id, chunk_index)
) STRICT;

-- Outputs of one tool call in a run, by artifact id. The primary key serves list-by-run and
-- delete-by-run (run_id is its prefix).
CREATE TABLE tool_artifacts (
  run_id TEXT NOT NULL,
  artifact_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  blob BLOB,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, artifact_id)
) STRICT;

-- Files a run produced (trajectories, reports), by canonical VFS-style path within the run.
CREATE TABLE run_artifacts (
  run_id TEXT NOT NULL,
  path TEXT NOT NULL,
  kind TEXT NOT NULL,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  blob BLOB,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, path)
) STRICT;

-- Agent-local runtime caches. An entry is live while expires_at IS NULL or now < expires_at;
-- reads filter on it, and a sweep deletes expired rows through the partial index.
CREATE TABLE cache_entries (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  value_json TEXT,
  blob BLOB,
  expires_at INTEGER,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) STRICT;

CREATE INDEX cache_entries_expiry ON cache_entries (expires_at) WHERE expires_at IS NOT NULL;
