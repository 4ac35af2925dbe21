import { MIGRATION_QUARANTINE_COLUMNS } from "./migration-quarantine-rows.js";

const BY_LINE = "ORDER BY source_path, line_number, line_sha256 LIMIT @limit";

/**
 * Quarantine statements shared by `MigrationQuarantineStore` (SQLite) and the PostgreSQL control
 * plane: the same text on both, `@name`s turned into `$n`s on PostgreSQL. Lists break ties by the
 * line's hash and counts come by run id, so both backends answer in one order.
 */
export const QUARANTINE_SQL = {
  insert: `INSERT INTO migration_quarantine (${MIGRATION_QUARANTINE_COLUMNS.join(", ")})
      VALUES (@path, @line, @sha256, @kind, @sourceSha256, @reason, @bytes, @runId, @now)
    ON CONFLICT (source_path, line_number, line_sha256) DO NOTHING RETURNING line_number`,
  all: `SELECT * FROM migration_quarantine ${BY_LINE}`,
  ofRun: `SELECT * FROM migration_quarantine WHERE run_id = @runId ${BY_LINE}`,
  counts: `SELECT run_id, count(*) AS lines FROM migration_quarantine
    GROUP BY run_id ORDER BY run_id`,
} as const;
