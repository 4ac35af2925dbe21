import { CRON_JOB_COLUMNS } from "./cron-rows.js";

/** A new job starts unclaimed. */
const INSERTED = CRON_JOB_COLUMNS.filter((c) => !c.startsWith("claim_"));

// `enabled = 1` and `IS NOT NULL` as literals, matching the partial index cron_jobs_due. A job
// another host claimed stays out of every other claim until its claim lapses.
const CLAIMABLE = `enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= @now
  AND (claim_until IS NULL OR claim_until <= @now)`;

/**
 * Cron statements shared by `CronStore` (SQLite) and the PostgreSQL control plane: the same text
 * on both, with its `@name`s turned into `$n`s on PostgreSQL. Parameters PostgreSQL could not type
 * from a column are CAST, which both dialects read.
 */
export const CRON_SQL = {
  select: "SELECT * FROM cron_jobs WHERE job_id = @jobId",
  insert: `INSERT INTO cron_jobs (${INSERTED.join(", ")})
    VALUES (${INSERTED.map((c) => `@${c}`).join(", ")}) ON CONFLICT DO NOTHING RETURNING *`,
  replaceDefinition: `UPDATE cron_jobs SET agent_id = @agent_id, name = @name, enabled = @enabled,
      schedule_json = @schedule_json, payload_json = @payload_json, definition_json = @definition_json,
      next_run_at = @next_run_at, updated_at = @updated_at
    WHERE job_id = @job_id RETURNING *`,
  // A recorded run ends whatever claim the job was under.
  updateState: `UPDATE cron_jobs SET next_run_at = @next, last_run_at = @ranAt, last_status = @status,
      last_error = @error, last_duration_ms = @durationMs, updated_at = @now,
      consecutive_errors = CASE CAST(@status AS TEXT) WHEN 'ok' THEN 0
        WHEN 'error' THEN consecutive_errors + 1 ELSE consecutive_errors END,
      claim_owner = NULL, claim_id = NULL, claim_until = NULL
    WHERE job_id = @jobId RETURNING *`,
  restoreState: `UPDATE cron_jobs SET next_run_at = @next_run_at, last_run_at = @last_run_at,
      last_status = @last_status, last_error = @last_error, last_duration_ms = @last_duration_ms,
      consecutive_errors = @consecutive_errors, updated_at = @updated_at
    WHERE job_id = @job_id RETURNING *`,
  delete: "DELETE FROM cron_jobs WHERE job_id = @jobId",
  nextDue:
    "SELECT min(next_run_at) AS at FROM cron_jobs WHERE enabled = 1 AND next_run_at IS NOT NULL",
  // When the earliest job can next be claimed: its next run, or its claim's end if that is later.
  nextClaimable: `SELECT min(CASE WHEN claim_until > next_run_at THEN claim_until ELSE next_run_at END)
      AS at
    FROM cron_jobs WHERE enabled = 1 AND next_run_at IS NOT NULL`,
  list: `SELECT * FROM cron_jobs WHERE job_id > @after
      AND (CAST(@agentId AS TEXT) IS NULL OR agent_id = @agentId)
      AND (CAST(@enabled AS INTEGER) IS NULL OR enabled = @enabled)
    ORDER BY job_id LIMIT @limit`,
} as const;

/**
 * Claims up to `@limit` due jobs for `@owner` until `@claimUntil`, earliest first, each under the
 * call's fresh `@claimId` suffixed with its job id. On PostgreSQL `lock` is FOR UPDATE SKIP LOCKED:
 * concurrent claimers pass over jobs being claimed instead of queueing behind them (and, after
 * the other's commit, find them claimed). On SQLite the write lock of the transaction serializes.
 */
export function cronClaimSql(lock: "" | "FOR UPDATE SKIP LOCKED"): string {
  return `UPDATE cron_jobs SET claim_owner = @owner,
      claim_id = CAST(@claimId AS TEXT) || ':' || job_id, claim_until = @claimUntil
    WHERE job_id IN (SELECT job_id FROM cron_jobs WHERE ${CLAIMABLE}
      ORDER BY next_run_at, job_id LIMIT @limit ${lock})
    RETURNING *`;
}

/** The run log's statements, shared the same way. */
export const CRON_RUN_LOG_SQL = {
  insert: `INSERT INTO cron_run_logs (job_id, ran_at, status, duration_ms, error, record_json)
    VALUES (@jobId, @ranAt, @status, @durationMs, @error, @record)`,
  trim: `DELETE FROM cron_run_logs WHERE job_id = @jobId AND (ran_at, id) <= (
      SELECT ran_at, id FROM cron_run_logs WHERE job_id = @jobId
      ORDER BY ran_at DESC, id DESC LIMIT 1 OFFSET @keep)`,
  deleteJob: "DELETE FROM cron_run_logs WHERE job_id = @jobId",
  listFirst: `SELECT * FROM cron_run_logs WHERE job_id = @jobId
    ORDER BY ran_at DESC, id DESC LIMIT @limit`,
  listBefore: `SELECT * FROM cron_run_logs WHERE job_id = @jobId
      AND (ran_at, id) < (SELECT ran_at, id FROM cron_run_logs WHERE id = @before)
    ORDER BY ran_at DESC, id DESC LIMIT @limit`,
} as const;
