-- A run records the process that owns it (pid and start time in clock ticks since boot), so a
-- later command can tell a run whose process was killed from one still going and mark it
-- 'interrupted'. backup_runs is rebuilt because SQLite cannot change a CHECK constraint in place;
-- no table references it, so dropping the old one takes nothing with it.

CREATE TABLE backup_runs_new (
  id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  archive_path TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  manifest_json TEXT NOT NULL DEFAULT '{}',
  owner_pid INTEGER,
  owner_started INTEGER
) STRICT;

INSERT INTO backup_runs_new (id, created_at, archive_path, status, manifest_json)
  SELECT id, created_at, archive_path, status, manifest_json FROM backup_runs;

DROP TABLE backup_runs;
ALTER TABLE backup_runs_new RENAME TO backup_runs;
CREATE INDEX backup_runs_created ON backup_runs (created_at);

-- Adding nullable columns keeps every row and the sources' and quarantine's foreign keys as they are.
ALTER TABLE migration_runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE migration_runs ADD COLUMN owner_started INTEGER;
