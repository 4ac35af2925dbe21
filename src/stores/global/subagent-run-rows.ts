import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import {
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

export type SubagentRunRow = {
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

export const SESSION_KEY_COLUMNS = {
  child: "child_session_key",
  requester: "requester_session_key",
  controller: "controller_session_key",
} as const;

export type SubagentSessionRole = keyof typeof SESSION_KEY_COLUMNS;

export function fromRow(row: SubagentRunRow): SubagentRun {
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

/** The upsert's parameters for a whole record, every field checked before anything is written. */
export function rowValues(record: unknown, now: number): SubagentRunRow {
  if (!isPlainObject(record)) {
    throw new StateError("E_INVALID_ARGUMENT", "a subagent run must be a plain JSON object");
  }
  const id = checkRunId(record.runId);
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

export function checkRunId(runId: unknown): string {
  return checkText("subagent runId", runId, 256);
}

export function noSubagentRun(runId: string): StateError {
  return new StateError("E_NOT_FOUND", `no subagent run ${runId}`, { details: { runId } });
}

/**
 * The row `patch` makes of `current` (a shallow merge, or the function's result), refused when it
 * renames the run. The caller holds the row (a SQLite write transaction, a PostgreSQL row lock)
 * from the read of `current` to the write of the result.
 */
export function patchedValues(
  current: SubagentRunRow,
  patch: SubagentRunPatch,
  now: number,
): SubagentRunRow {
  const id = current.run_id;
  const record = fromRow(current).record;
  const next = typeof patch === "function" ? patch(record) : { ...record, ...patch };
  if (next.runId !== id) {
    throw new StateError("E_INVALID_ARGUMENT", `subagent run ${id} cannot change its runId`);
  }
  return rowValues(next, now);
}

/** `end`'s patch: ended at `now` unless the fields say when, with the outcome merged in. */
export function endPatch(fields: Partial<SubagentRunRecord>, now: () => number): SubagentRunPatch {
  return (current) => ({ ...current, endedAt: now(), ...fields });
}

export const CLEANUP_HANDLED: SubagentRunPatch = (current) => ({
  ...current,
  cleanupHandled: true,
});

/** `listBySession`'s parameters, checked in the store's order: role, options, key, limit. */
export function sessionListParams(role: unknown, sessionKey: unknown, options: object) {
  if (!Object.hasOwn(SESSION_KEY_COLUMNS, role as PropertyKey)) {
    throw new TypeError(`Expected a role of child, requester or controller, got ${String(role)}`);
  }
  const { limit } = checkOptions(
    options as { limit?: number },
    ["limit"],
    "SubagentRunStore.listBySession",
  );
  return {
    role: String(role) as SubagentSessionRole,
    params: { key: checkText("session key", sessionKey), limit: checkLimit(limit) },
  };
}

/** A recovery worklist's `limit`, its options checked as `SubagentRunStore.<method>`'s. */
export function worklistLimit(method: string, options: object): { limit: number } {
  const { limit } = checkOptions(
    options as { limit?: number },
    ["limit"],
    `SubagentRunStore.${method}`,
  );
  return { limit: checkLimit(limit) };
}
