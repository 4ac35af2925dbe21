import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  decodeJson,
  encodeRecord,
  isPlainObject,
  optionalText,
  optionalTime,
} from "../checks.js";

/** Records carry the task prompt and a frozen result text; both can be long. */
export const MAX_SUBAGENT_RECORD_BYTES = 1024 * 1024;

type SubagentRunRow = {
  run_id: string;
  child_session_key: string | null;
  requester_session_key: string | null;
  controller_session_key: string | null;
  created_at: number;
  ended_at: number | null;
  cleanup_handled: number;
  payload_json: string;
};

export const SUBAGENT_RUN_COLUMNS = columnsOf<SubagentRunRow>()(
  "run_id",
  "child_session_key",
  "requester_session_key",
  "controller_session_key",
  "created_at",
  "ended_at",
  "cleanup_handled",
  "payload_json",
);

/**
 * A subagent run in the registry's record shape (`runId`, `childSessionKey`, `task`, `outcome`,
 * `frozenResultText` …), kept verbatim; the fields below are also columns for lookups.
 */
export interface SubagentRunRecord {
  runId: string;
  childSessionKey?: string;
  requesterSessionKey?: string;
  controllerSessionKey?: string;
  /** Default: now. */
  createdAt?: number;
  /** Absent while the run is in progress. */
  endedAt?: number | null;
  cleanupHandled?: boolean;
  [key: string]: unknown;
}

export interface SubagentRun {
  runId: string;
  childSessionKey: string | null;
  requesterSessionKey: string | null;
  controllerSessionKey: string | null;
  createdAt: number;
  endedAt: number | null;
  cleanupHandled: boolean;
  record: SubagentRunRecord;
}

export type SubagentRunPatch =
  | Partial<SubagentRunRecord>
  | ((current: SubagentRunRecord) => SubagentRunRecord);

const SESSION_KEY_COLUMNS = {
  child: "child_session_key",
  requester: "requester_session_key",
  controller: "controller_session_key",
} as const;

export type SubagentSessionRole = keyof typeof SESSION_KEY_COLUMNS;

function fromRow(row: SubagentRunRow): SubagentRun {
  return {
    runId: row.run_id,
    childSessionKey: row.child_session_key,
    requesterSessionKey: row.requester_session_key,
    controllerSessionKey: row.controller_session_key,
    createdAt: row.created_at,
    endedAt: row.ended_at,
    cleanupHandled: row.cleanup_handled === 1,
    record: decodeJson<SubagentRunRecord>(`subagent run ${row.run_id}`, row.payload_json),
  };
}

function rowValues(record: unknown, now: number): SubagentRunRow {
  if (!isPlainObject(record)) {
    throw new StateError("E_INVALID_ARGUMENT", "a subagent run must be a plain JSON object");
  }
  const id = checkText("subagent runId", record.runId, 256);
  const key = (name: string) => optionalText(`subagent run ${id} ${name}`, record[name]);
  return {
    run_id: id,
    child_session_key: key("childSessionKey"),
    requester_session_key: key("requesterSessionKey"),
    controller_session_key: key("controllerSessionKey"),
    created_at: optionalTime(`subagent run ${id} createdAt`, record.createdAt) ?? now,
    ended_at: optionalTime(`subagent run ${id} endedAt`, record.endedAt),
    cleanup_handled: record.cleanupHandled === true ? 1 : 0,
    payload_json: encodeRecord(`subagent run ${id}`, record, MAX_SUBAGENT_RECORD_BYTES),
  };
}

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
    const columns = SUBAGENT_RUN_COLUMNS.join(", ");
    const updates = SUBAGENT_RUN_COLUMNS.slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(", ");
    this.upsertRow = db.prepare(
      `INSERT INTO subagent_runs (${columns}) VALUES (${SUBAGENT_RUN_COLUMNS.map((c) => `@${c}`).join(", ")})
       ON CONFLICT DO UPDATE SET ${updates} RETURNING *`,
    );
    this.selectOne = db.prepare("SELECT * FROM subagent_runs WHERE run_id = ?");
    this.deleteOne = db.prepare("DELETE FROM subagent_runs WHERE run_id = ?");
    const list = (column: string) =>
      db.prepare<SubagentRunRow>(
        `SELECT * FROM subagent_runs WHERE ${column} = ? ORDER BY created_at, run_id LIMIT ?`,
      );
    this.bySession = {
      child: list(SESSION_KEY_COLUMNS.child),
      requester: list(SESSION_KEY_COLUMNS.requester),
      controller: list(SESSION_KEY_COLUMNS.controller),
    };
    this.unfinished = db.prepare(
      "SELECT * FROM subagent_runs WHERE ended_at IS NULL ORDER BY created_at LIMIT ?",
    );
    this.pendingCleanup = db.prepare(
      `SELECT * FROM subagent_runs WHERE ended_at IS NOT NULL AND cleanup_handled = 0
       ORDER BY ended_at LIMIT ?`,
    );
  }

  /** Writes a run's whole record, replacing any earlier one. */
  upsert(record: SubagentRunRecord): SubagentRun {
    return fromRow(this.upsertRow.get(rowValues(record, this.clock())) as SubagentRunRow);
  }

  get(runId: string): SubagentRun | undefined {
    const row = this.selectOne.get(checkText("subagent runId", runId, 256));
    return row ? fromRow(row) : undefined;
  }

  /** Read-modify-write of one record in a transaction (shallow merge, or a function). */
  update(runId: string, patch: SubagentRunPatch): SubagentRun {
    const id = checkText("subagent runId", runId, 256);
    return this.db.tx(() => {
      const row = this.selectOne.get(id);
      if (!row)
        throw new StateError("E_NOT_FOUND", `no subagent run ${id}`, { details: { runId: id } });
      const current = fromRow(row).record;
      const next = typeof patch === "function" ? patch(current) : { ...current, ...patch };
      if (next.runId !== id) {
        throw new StateError("E_INVALID_ARGUMENT", `subagent run ${id} cannot change its runId`);
      }
      return fromRow(this.upsertRow.get(rowValues(next, this.clock())) as SubagentRunRow);
    });
  }

  /** Marks a run ended (default now), merging any outcome fields into its record. */
  end(runId: string, fields: Partial<SubagentRunRecord> = {}): SubagentRun {
    return this.update(runId, (current) => ({ ...current, endedAt: this.clock(), ...fields }));
  }

  markCleanupHandled(runId: string): SubagentRun {
    return this.update(runId, (current) => ({ ...current, cleanupHandled: true }));
  }

  delete(runId: string): boolean {
    return this.deleteOne.run(checkText("subagent runId", runId, 256)).changes > 0;
  }

  /** Runs in which `sessionKey` plays `role` (child, requester or controller), oldest first. */
  listBySession(
    role: SubagentSessionRole,
    sessionKey: string,
    options: { limit?: number } = {},
  ): SubagentRun[] {
    if (!Object.hasOwn(SESSION_KEY_COLUMNS, role)) {
      throw new TypeError(`Expected a role of child, requester or controller, got ${String(role)}`);
    }
    const statement = this.bySession[role];
    const { limit } = checkOptions(options, ["limit"], "SubagentRunStore.listBySession");
    return statement.all(checkText("session key", sessionKey), checkLimit(limit)).map(fromRow);
  }

  /** Runs without an end: after a restart, each must be resumed or ended. Oldest first. */
  listUnfinished(options: { limit?: number } = {}): SubagentRun[] {
    const { limit } = checkOptions(options, ["limit"], "SubagentRunStore.listUnfinished");
    return this.unfinished.all(checkLimit(limit)).map(fromRow);
  }

  /** Ended runs whose cleanup (announce, archive, session removal) has not been handled. */
  listPendingCleanup(options: { limit?: number } = {}): SubagentRun[] {
    const { limit } = checkOptions(options, ["limit"], "SubagentRunStore.listPendingCleanup");
    return this.pendingCleanup.all(checkLimit(limit)).map(fromRow);
  }
}
