import { BACKUP_RUN_COLUMNS } from "./backup-run-rows.js";

const NEWEST_FIRST = "ORDER BY created_at DESC, id DESC";

/**
 * Backup run statements shared by `BackupRunStore` (SQLite) and the PostgreSQL control plane: the
 * same text on both, `@name`s turned into `$n`s on PostgreSQL. `finish` is one statement that
 * ends only a running run, so of two hosts ending one run exactly one does.
 */
export const BACKUP_RUN_SQL = {
  insert: `INSERT INTO backup_runs (${BACKUP_RUN_COLUMNS.filter((c) => c !== "manifest_json").join(", ")})
      VALUES (@id, @createdAt, @archivePath, 'running', @ownerPid, @ownerStarted)
    ON CONFLICT DO NOTHING RETURNING id`,
  finish: `UPDATE backup_runs SET status = @status, manifest_json = @manifest
    WHERE id = @id AND status = 'running' RETURNING id`,
  select: "SELECT * FROM backup_runs WHERE id = @id",
  recent: `SELECT * FROM backup_runs ${NEWEST_FIRST} LIMIT @limit`,
  all: `SELECT * FROM backup_runs ${NEWEST_FIRST}`,
  running: "SELECT * FROM backup_runs WHERE status = 'running' ORDER BY created_at, id",
} as const;
