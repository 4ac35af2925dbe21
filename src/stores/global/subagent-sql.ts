import { SESSION_KEY_COLUMNS, SUBAGENT_RUN_COLUMNS } from "./subagent-run-rows.js";

const bySession = (column: string) =>
  `SELECT * FROM subagent_runs WHERE ${column} = @key ORDER BY created_at, run_id LIMIT @limit`;

/**
 * Subagent run statements shared by `SubagentRunStore` (SQLite) and the PostgreSQL control plane:
 * the same text on both, `@name`s turned into `$n`s on PostgreSQL. Every list breaks ties by run
 * id, so both backends answer in one order. The worklists' predicates are literals, matching the
 * partial indexes subagent_runs_unfinished and subagent_runs_cleanup.
 */
export const SUBAGENT_SQL = {
  upsert: `INSERT INTO subagent_runs (${SUBAGENT_RUN_COLUMNS.join(", ")})
      VALUES (${SUBAGENT_RUN_COLUMNS.map((c) => `@${c}`).join(", ")})
    ON CONFLICT (run_id) DO UPDATE SET ${SUBAGENT_RUN_COLUMNS.slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(", ")}
    RETURNING *`,
  select: "SELECT * FROM subagent_runs WHERE run_id = @runId",
  delete: "DELETE FROM subagent_runs WHERE run_id = @runId",
  byChild: bySession(SESSION_KEY_COLUMNS.child),
  byRequester: bySession(SESSION_KEY_COLUMNS.requester),
  byController: bySession(SESSION_KEY_COLUMNS.controller),
  unfinished: `SELECT * FROM subagent_runs WHERE ended_at IS NULL
    ORDER BY created_at, run_id LIMIT @limit`,
  pendingCleanup: `SELECT * FROM subagent_runs WHERE ended_at IS NOT NULL AND cleanup_handled = 0
    ORDER BY ended_at, run_id LIMIT @limit`,
} as const;
