import { FLOW_RUN_COLUMNS } from "./flow-rows.js";

/**
 * Flow statements shared by `FlowStore` (SQLite) and the PostgreSQL control plane: the same text
 * on both, `@name`s turned into `$n`s on PostgreSQL. `CASE` stands for `iif`, which PostgreSQL
 * lacks. Lists tie-break by flow id, so both backends answer in one order.
 */
export const FLOW_SQL = {
  insert: `INSERT INTO flow_runs (${FLOW_RUN_COLUMNS.join(", ")})
      VALUES (@flowId, @ownerKey, @status, @goal, @currentStep, 1, @record, @createdAt, @now,
        @endedAt)
    ON CONFLICT DO NOTHING RETURNING *`,
  select: "SELECT * FROM flow_runs WHERE flow_id = @flowId",
  write: `UPDATE flow_runs SET status = @status, current_step = @currentStep,
      record_json = @record, revision = revision + 1, updated_at = @now,
      ended_at = CASE WHEN @terminal = 1 THEN @now ELSE ended_at END
    WHERE flow_id = @flowId RETURNING *`,
  delete: "DELETE FROM flow_runs WHERE flow_id = @flowId",
  byStatus: `SELECT * FROM flow_runs WHERE status = @status ORDER BY created_at, flow_id
    LIMIT @limit`,
  byOwner: `SELECT * FROM flow_runs WHERE owner_key = @ownerKey ORDER BY created_at, flow_id
    LIMIT @limit`,
} as const;
