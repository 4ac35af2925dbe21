import { COMMITMENT_COLUMNS } from "./commitment-rows.js";

/**
 * Commitment statements shared by `CommitmentStore` (SQLite) and the PostgreSQL control plane: the
 * same text on both, `@name`s turned into `$n`s on PostgreSQL. The conflict target is named, as
 * PostgreSQL needs it for an update; lists tie-break by id. `listDue`'s predicate is a literal,
 * matching the partial index commitments_due.
 */
export const COMMITMENT_SQL = {
  // Every write is one statement: of racing writers to one id, the last stands whole.
  upsert: `INSERT INTO commitments (${COMMITMENT_COLUMNS.join(", ")})
      VALUES (${COMMITMENT_COLUMNS.map((c) => `@${c}`).join(", ")})
    ON CONFLICT (id) DO UPDATE SET ${COMMITMENT_COLUMNS.slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(", ")}
    RETURNING *`,
  select: "SELECT * FROM commitments WHERE id = @id",
  setStatus:
    "UPDATE commitments SET status = @status, updated_at = @now WHERE id = @id RETURNING *",
  delete: "DELETE FROM commitments WHERE id = @id",
  due: `SELECT * FROM commitments WHERE status = 'pending' AND due_earliest_at <= @now
    ORDER BY due_earliest_at, id LIMIT @limit`,
  bySession: `SELECT * FROM commitments WHERE agent_id = @agentId AND session_key = @sessionKey
    ORDER BY due_earliest_at, id LIMIT @limit`,
} as const;
