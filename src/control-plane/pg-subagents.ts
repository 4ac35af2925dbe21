import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
import {
  CLEANUP_HANDLED,
  checkRunId,
  endPatch,
  fromRow,
  noSubagentRun,
  patchedValues,
  rowValues,
  type SubagentRun,
  type SubagentRunPatch,
  type SubagentRunRecord,
  type SubagentRunRow,
  type SubagentSessionRole,
  sessionListParams,
  worklistLimit,
} from "../stores/global/subagent-run-rows.js";
import { SUBAGENT_SQL } from "../stores/global/subagent-sql.js";
import type { ControlPlaneSubagents } from "./control-plane.js";
import { type PgStatement, pgStatements, query, transaction } from "./pg-statements.js";

// `SUBAGENT_SQL` as it is, plus the row lock an update holds from its read to its write, so of two
// hosts patching one run, the second reads the first's commit and loses nothing of it.
const SQL = pgStatements("subagents", {
  ...SUBAGENT_SQL,
  lock: `${SUBAGENT_SQL.select} FOR UPDATE`,
  delete: `${SUBAGENT_SQL.delete} RETURNING run_id`,
});
const BY_SESSION: Record<SubagentSessionRole, PgStatement> = {
  child: SQL.byChild,
  requester: SQL.byRequester,
  controller: SQL.byController,
};

/** The subagent run registry on PostgreSQL: `SubagentRunStore`'s statements and rules. */
export class PgSubagents implements ControlPlaneSubagents {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async upsert(record: SubagentRunRecord): Promise<SubagentRun> {
    const [row] = await query<SubagentRunRow>(
      this.pool,
      SQL.upsert,
      rowValues(record, this.clock()),
    );
    return fromRow(row as SubagentRunRow);
  }

  async get(runId: string): Promise<SubagentRun | undefined> {
    const [row] = await query<SubagentRunRow>(this.pool, SQL.select, { runId: checkRunId(runId) });
    return row ? fromRow(row) : undefined;
  }

  async update(runId: string, patch: SubagentRunPatch): Promise<SubagentRun> {
    const id = checkRunId(runId);
    return transaction(this.pool, async (client) => {
      const [current] = await query<SubagentRunRow>(client, SQL.lock, { runId: id });
      if (!current) throw noSubagentRun(id);
      const values = patchedValues(current, patch, this.clock());
      const [row] = await query<SubagentRunRow>(client, SQL.upsert, values);
      return fromRow(row as SubagentRunRow);
    });
  }

  end(runId: string, fields: Partial<SubagentRunRecord> = {}): Promise<SubagentRun> {
    return this.update(runId, endPatch(fields, this.clock));
  }

  markCleanupHandled(runId: string): Promise<SubagentRun> {
    return this.update(runId, CLEANUP_HANDLED);
  }

  async delete(runId: string): Promise<boolean> {
    const rows = await query(this.pool, SQL.delete, { runId: checkRunId(runId) });
    return rows.length > 0;
  }

  async listBySession(
    role: SubagentSessionRole,
    sessionKey: string,
    options: { limit?: number } = {},
  ): Promise<SubagentRun[]> {
    const { role: checked, params } = sessionListParams(role, sessionKey, options);
    return (await query<SubagentRunRow>(this.pool, BY_SESSION[checked], params)).map(fromRow);
  }

  async listUnfinished(options: { limit?: number } = {}): Promise<SubagentRun[]> {
    const params = worklistLimit("listUnfinished", options);
    return (await query<SubagentRunRow>(this.pool, SQL.unfinished, params)).map(fromRow);
  }

  async listPendingCleanup(options: { limit?: number } = {}): Promise<SubagentRun[]> {
    const params = worklistLimit("listPendingCleanup", options);
    return (await query<SubagentRunRow>(this.pool, SQL.pendingCleanup, params)).map(fromRow);
  }
}
