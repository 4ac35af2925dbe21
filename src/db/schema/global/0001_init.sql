-- Global control-plane database: agent registry, small scoped state, operation ledgers.
-- Times are INTEGER Unix milliseconds named *_at; ids are TEXT.

CREATE TABLE kv (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  value_json TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;

CREATE TABLE agents (
  agent_id TEXT PRIMARY KEY,
  config_fingerprint TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  -- Relative to the home, so a restored or moved home still resolves it.
  agent_db_path TEXT NOT NULL
) STRICT;

CREATE TABLE agent_databases (
  agent_id TEXT PRIMARY KEY REFERENCES agents (agent_id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL
) STRICT;

CREATE TABLE migration_runs (
  id TEXT PRIMARY KEY,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'partial', 'failed')),
  report_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX migration_runs_started ON migration_runs (started_at);

CREATE TABLE migration_sources (
  source_key TEXT PRIMARY KEY,
  migration_kind TEXT NOT NULL,
  source_path TEXT NOT NULL,
  target_table TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  source_size_bytes INTEGER NOT NULL,
  source_record_count INTEGER NOT NULL,
  last_run_id TEXT REFERENCES migration_runs (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('imported', 'skipped', 'warning', 'failed')),
  imported_at INTEGER,
  removed_source INTEGER NOT NULL DEFAULT 0 CHECK (removed_source IN (0, 1)),
  report_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX migration_sources_run ON migration_sources (last_run_id);

CREATE TABLE backup_runs (
  id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  archive_path TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
  manifest_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX backup_runs_created ON backup_runs (created_at);
