-- A doctor run stopped by SIGINT/SIGTERM ends as 'interrupted' instead of staying 'running'.
-- SQLite cannot change a CHECK constraint in place, so both ledger tables are rebuilt. The
-- sources are copied to a table that references the new runs table before the old runs table is
-- dropped: dropping it deletes its rows first, and ON DELETE CASCADE would take the sources too.

CREATE TABLE migration_runs_new (
  id TEXT PRIMARY KEY,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  status TEXT NOT NULL
    CHECK (status IN ('running', 'succeeded', 'partial', 'failed', 'interrupted')),
  report_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

INSERT INTO migration_runs_new (id, started_at, finished_at, status, report_json)
  SELECT id, started_at, finished_at, status, report_json FROM migration_runs;

CREATE TABLE migration_sources_new (
  source_key TEXT PRIMARY KEY,
  migration_kind TEXT NOT NULL,
  source_path TEXT NOT NULL,
  target_table TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  source_size_bytes INTEGER NOT NULL,
  source_record_count INTEGER NOT NULL,
  last_run_id TEXT REFERENCES migration_runs_new (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('imported', 'skipped', 'warning', 'failed')),
  imported_at INTEGER,
  removed_source INTEGER NOT NULL DEFAULT 0 CHECK (removed_source IN (0, 1)),
  report_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

INSERT INTO migration_sources_new
  SELECT source_key, migration_kind, source_path, target_table, source_sha256, source_size_bytes,
         source_record_count, last_run_id, status, imported_at, removed_source, report_json
  FROM migration_sources;

DROP TABLE migration_sources;
DROP TABLE migration_runs;
-- Renaming rewrites the sources' REFERENCES clause to the final name.
ALTER TABLE migration_runs_new RENAME TO migration_runs;
ALTER TABLE migration_sources_new RENAME TO migration_sources;

CREATE INDEX migration_runs_started ON migration_runs (started_at);
CREATE INDEX migration_sources_run ON migration_sources (last_run_id);
