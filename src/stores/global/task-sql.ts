import { TASK_DELIVERY_COLUMNS } from "./task-delivery-rows.js";
import { TASK_RUN_COLUMNS } from "./task-rows.js";

const PAGE = "ORDER BY created_at, task_id LIMIT @limit";

/**
 * Task statements shared by `TaskStore` (SQLite) and the PostgreSQL control plane: the same text
 * on both, `@name`s turned into `$n`s on PostgreSQL. CASE stands where SQLite had `iif`, and
 * parameters PostgreSQL could not type from a column are CAST, which both dialects read.
 */
export const TASK_SQL = {
  insert: `INSERT INTO task_runs (${TASK_RUN_COLUMNS.join(", ")})
    VALUES (${TASK_RUN_COLUMNS.map((c) => `@${c}`).join(", ")}) ON CONFLICT DO NOTHING RETURNING *`,
  select: "SELECT * FROM task_runs WHERE task_id = @taskId",
  moveTo: `UPDATE task_runs SET status = @to, updated_at = @now, record_json = @record,
      error = coalesce(@error, error),
      started_at = CASE WHEN CAST(@to AS TEXT) = 'running' THEN coalesce(started_at, @at)
        ELSE started_at END,
      ended_at = CASE WHEN CAST(@terminal AS INTEGER) = 1 THEN @at ELSE ended_at END
    WHERE task_id = @taskId RETURNING *`,
  delete: "DELETE FROM task_runs WHERE task_id = @taskId",
  byStatus: `SELECT * FROM task_runs WHERE status = @value ${PAGE}`,
  byFlow: `SELECT * FROM task_runs WHERE flow_id = @value ${PAGE}`,
  byRequester: `SELECT * FROM task_runs WHERE requester_session_key = @value ${PAGE}`,
} as const;

/** A task's delivery state; the upsert keeps the origin and notify time unless given. */
export const TASK_DELIVERY_SQL = {
  upsert: `INSERT INTO task_delivery_state (${TASK_DELIVERY_COLUMNS.join(", ")})
      VALUES (@taskId, @status, @origin, @notifiedAt, @now)
    ON CONFLICT (task_id) DO UPDATE SET status = excluded.status,
      updated_at = excluded.updated_at,
      requester_origin_json = CASE WHEN CAST(@keepOrigin AS INTEGER) = 1
        THEN task_delivery_state.requester_origin_json ELSE excluded.requester_origin_json END,
      last_notified_at = coalesce(excluded.last_notified_at, task_delivery_state.last_notified_at)
    RETURNING *`,
  taskExists: "SELECT 1 AS found FROM task_runs WHERE task_id = @taskId",
  select: "SELECT * FROM task_delivery_state WHERE task_id = @taskId",
  // `status = 'pending'` as a literal, matching the partial index task_delivery_state_pending.
  pending: `SELECT * FROM task_delivery_state WHERE status = 'pending'
    ORDER BY updated_at, task_id LIMIT @limit`,
} as const;
