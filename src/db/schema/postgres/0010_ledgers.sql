-- The backup and migration ledgers, as backup_runs, migration_runs, migration_sources and
-- migration_quarantine in the global SQLite schema (0001_init.sql, 0004-0006): same columns,
-- checks, keys and indexes, so hosts sharing this control plane see each other's backups and
-- imports. Reports and manifests stay TEXT, byte-exact; a quarantined line's bytes are BYTEA.
-- Keys and the columns that lists sort by compare bytewise ("C"), as SQLite's BINARY does.
CREATE TABLE backup_runs (
  id TEXT COLLATE "C" PRIMARY KEY,
  created_at BIGINT NOT NULL,
  archive_path TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  manifest_json TEXT NOT NULL DEFAULT '{}',
  owner_pid BIGINT,
  owner_started BIGINT
);

CREATE INDEX backup_runs_created ON backup_runs (created_at);

CREATE TABLE migration_runs (
  id TEXT COLLATE "C" PRIMARY KEY,
  started_at BIGINT NOT NULL,
  finished_at BIGINT,
  status TEXT NOT NULL
    CHECK (status IN ('running', 'succeeded', 'partial', 'failed', 'interrupted')),
  report_json TEXT NOT NULL DEFAULT '{}',
  owner_pid BIGINT,
  owner_started BIGINT
);

CREATE INDEX migration_runs_started ON migration_runs (started_at);

CREATE TABLE migration_sources (
  source_key TEXT COLLATE "C" PRIMARY KEY,
  migration_kind TEXT NOT NULL,
  source_path TEXT COLLATE "C" NOT NULL,
  target_table TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  source_size_bytes BIGINT NOT NULL,
  source_record_count BIGINT NOT NULL,
  last_run_id TEXT COLLATE "C" REFERENCES migration_runs (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('imported', 'skipped', 'warning', 'failed')),
  imported_at BIGINT,
  removed_source INTEGER NOT NULL DEFAULT 0 CHECK (removed_source IN (0, 1)),
  report_json TEXT NOT NULL DEFAULT '{}'
);

CREATE INDEX migration_sources_run ON migration_sources (last_run_id);
CREATE INDEX migration_sources_path ON migration_sources (source_path);

CREATE TABLE migration_quarantine (
  source_path TEXT COLLATE "C" NOT NULL,
  line_number BIGINT NOT NULL CHECK (line_number >= 1),
  line_sha256 TEXT COLLATE "C" NOT NULL,
  migration_kind TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  reason TEXT NOT NULL,
  line_bytes BYTEA NOT NULL,
  run_id TEXT COLLATE "C" NOT NULL REFERENCES migration_runs (id),
  quarantined_at BIGINT NOT NULL,
  PRIMARY KEY (source_path, line_number, line_sha256)
);

CREATE INDEX migration_quarantine_run ON migration_quarantine (run_id);
