import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
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
} from "./subagent-run-rows.js";
import { SUBAGENT_SQL } from "./subagent-sql.js";

export {
  MAX_SUBAGENT_RECORD_BYTES,
  SUBAGENT_RUN_COLUMNS,
  type SubagentRun,
  type SubagentRunPatch,
  type SubagentRunRecord,
  type SubagentSessionRole,
} from "./subagent-run-rows.js";

/**
 * The subagent run registry (`subagent_runs`): one row per run, found by run id or by any of its
 * session keys. After a restart, `listUnfinished` and `listPendingCleanup` are the recovery worklists.
 */
export class SubagentRunStore {
  private readonly clock: Clock;
  private readonly upsertRow: SqlStatement<SubagentRunRow>;
  private readonly selectOne: SqlStatement<SubagentRunRow>;
  private readonly deleteOne: SqlStatement;
  private readonly bySession: Record<SubagentSessionRole, SqlStatement<SubagentRunRow>>;
  private readonly unfinished: SqlStatement<SubagentRunRow>;
  private readonly pendingCleanup: SqlStatement<SubagentRunRow>;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "SubagentRunStore").clock ?? Date.now;
    this.upsertRow = db.prepare(SUBAGENT_SQL.upsert);
    this.selectOne = db.prepare(SUBAGENT_SQL.select);
    this.deleteOne = db.prepare(SUBAGENT_SQL.delete);
    this.bySession = {
      child: db.prepare(SUBAGENT_SQL.byChild),
      requester: db.prepare(SUBAGENT_SQL.byRequester),
      controller: db.prepare(SUBAGENT_SQL.byController),
    };
    this.unfinished = db.prepare(SUBAGENT_SQL.unfinished);
    this.pendingCleanup = db.prepare(SUBAGENT_SQL.pendingCleanup);
  }

  /** Writes a run's whole record, replacing any earlier one. */
  upsert(record: SubagentRunRecord): SubagentRun {
    return fromRow(this.upsertRow.get(rowValues(record, this.clock())) as SubagentRunRow);
  }

  get(runId: string): SubagentRun | undefined {
    const row = this.selectOne.get({ runId: checkRunId(runId) });
    return row ? fromRow(row) : undefined;
  }

  /** Read-modify-write of one record in a transaction (shallow merge, or a function). */
  update(runId: string, patch: SubagentRunPatch): SubagentRun {
    const id = checkRunId(runId);
    return this.db.tx(() => {
      const row = this.selectOne.get({ runId: id });
      if (!row) throw noSubagentRun(id);
      const values = patchedValues(row, patch, this.clock());
      return fromRow(this.upsertRow.get(values) as SubagentRunRow);
    });
  }

  /** Marks a run ended (default now), merging any outcome fields into its record. */
  end(runId: string, fields: Partial<SubagentRunRecord> = {}): SubagentRun {
    return this.update(runId, endPatch(fields, this.clock));
  }

  markCleanupHandled(runId: string): SubagentRun {
    return this.update(runId, CLEANUP_HANDLED);
  }

  delete(runId: string): boolean {
    return this.deleteOne.run({ runId: checkRunId(runId) }).changes > 0;
  }

  /** Runs in which `sessionKey` plays `role` (child, requester or controller), oldest first. */
  listBySession(
    role: SubagentSessionRole,
    sessionKey: string,
    options: { limit?: number } = {},
  ): SubagentRun[] {
    const { role: checked, params } = sessionListParams(role, sessionKey, options);
    return this.bySession[checked].all(params).map(fromRow);
  }

  /** Runs without an end: after a restart, each must be resumed or ended. Oldest first. */
  listUnfinished(options: { limit?: number } = {}): SubagentRun[] {
    return this.unfinished.all(worklistLimit("listUnfinished", options)).map(fromRow);
  }

  /** Ended runs whose cleanup (announce, archive, session removal) has not been handled. */
  listPendingCleanup(options: { limit?: number } = {}): SubagentRun[] {
    return this.pendingCleanup.all(worklistLimit("listPendingCleanup", options)).map(fromRow);
  }
}
