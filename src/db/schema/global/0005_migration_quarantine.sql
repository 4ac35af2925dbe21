-- Lines of legacy sources that could not become records, kept byte for byte so that
-- `doctor --fix --quarantine` can finish a source (and remove it) without losing them.
-- One row per line of a source path: a rerun, or the same file after an append, adds it once.
CREATE TABLE migration_quarantine (
  source_path TEXT NOT NULL,
  line_number INTEGER NOT NULL CHECK (line_number >= 1),
  line_sha256 TEXT NOT NULL,
  migration_kind TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  reason TEXT NOT NULL,
  line_bytes BLOB NOT NULL,
  run_id TEXT NOT NULL REFERENCES migration_runs (id),
  quarantined_at INTEGER NOT NULL,
  PRIMARY KEY (source_path, line_number, line_sha256)
) STRICT;

CREATE INDEX migration_quarantine_run ON migration_quarantine (run_id);

-- The plan finds earlier imports of a file by its path, whatever its hash is now.
CREATE INDEX migration_sources_path ON migration_sources (source_path);
