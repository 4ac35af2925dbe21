import { MIGRATION_SOURCE_COLUMNS } from "./migration-ledger-rows.js";

const SOURCE_PARAMS = [
  "sourceKey",
  "kind",
  "path",
  "targetTable",
  "sha256",
  "sizeBytes",
  "recordCount",
  "lastRunId",
  "status",
  "importedAt",
  "removedSource",
  "report",
];
const SOURCE_UPDATES = [
  "last_run_id",
  "status",
  "imported_at",
  "removed_source",
  "source_record_count",
  "report_json",
];

/**
 * Migration ledger statements shared by `MigrationLedgerStore` (SQLite) and the PostgreSQL control
 * plane: the same text on both, `@name`s turned into `$n`s on PostgreSQL. Every write is one
 * statement returning its row, so no host reads a row between another's write and its read-back.
 * A source never imported sorts last by `NULLS LAST`, which SQLite does by default and PostgreSQL
 * does only when told.
 */
export const MIGRATION_SQL = {
  insertRun: `INSERT INTO migration_runs (id, started_at, status, report_json, owner_pid, owner_started)
      VALUES (@id, @startedAt, 'running', @report, @ownerPid, @ownerStarted)
    ON CONFLICT DO NOTHING RETURNING *`,
  finishRun: `UPDATE migration_runs SET finished_at = @finishedAt, status = @status,
      report_json = @report
    WHERE id = @id RETURNING *`,
  selectRun: "SELECT * FROM migration_runs WHERE id = @id",
  recentRuns: "SELECT * FROM migration_runs ORDER BY started_at DESC, id DESC LIMIT @limit",
  runningRuns: "SELECT * FROM migration_runs WHERE status = 'running' ORDER BY started_at, id",
  upsertSource: `INSERT INTO migration_sources (${MIGRATION_SOURCE_COLUMNS.join(", ")})
      VALUES (${SOURCE_PARAMS.map((p) => `@${p}`).join(", ")})
    ON CONFLICT (source_key) DO UPDATE SET ${SOURCE_UPDATES.map((c) => `${c} = excluded.${c}`).join(", ")}`,
  selectSource: "SELECT * FROM migration_sources WHERE source_key = @sourceKey",
  sourcesOfRun:
    "SELECT * FROM migration_sources WHERE last_run_id = @runId ORDER BY source_path, source_key",
  sourcesAtPath: `SELECT * FROM migration_sources WHERE source_path = @path
    ORDER BY imported_at DESC NULLS LAST, source_key`,
  markRemoved: "UPDATE migration_sources SET removed_source = 1 WHERE source_key = @sourceKey",
} as const;
