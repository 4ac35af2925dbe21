import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkStored,
  checkText,
  checkTime,
  decodeJson,
  encodeRecord,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import { checkStatus } from "./task-states.js";

export const COMMITMENT_STATUSES = ["pending", "snoozed", "sent", "dismissed", "expired"] as const;
export type CommitmentStatus = (typeof COMMITMENT_STATUSES)[number];

export interface CommitmentRow {
  id: string;
  agent_id: string;
  session_key: string;
  channel: string;
  status: string;
  due_earliest_at: number;
  due_latest_at: number;
  updated_at: number;
  record_json: string;
}

export const COMMITMENT_COLUMNS = columnsOf<CommitmentRow>()(
  "id",
  "agent_id",
  "session_key",
  "channel",
  "status",
  "due_earliest_at",
  "due_latest_at",
  "updated_at",
  "record_json",
);

/** Something an agent said it would do later ("I'll remind you on Friday"), due in a window. */
export interface Commitment {
  id: string;
  agentId: string;
  sessionKey: string;
  channel: string;
  status: CommitmentStatus;
  dueEarliestAt: number;
  dueLatestAt: number;
  updatedAt: number;
  /** The rest (kind, text, recipient, attempts …), verbatim. */
  record: { [key: string]: JsonValue };
}

export interface NewCommitment {
  id: string;
  agentId: string;
  sessionKey: string;
  channel: string;
  /** Default `pending`. */
  status?: CommitmentStatus;
  dueEarliestAt: number;
  dueLatestAt: number;
  record?: { [key: string]: JsonValue };
}

const KEYS = [
  "id",
  "agentId",
  "sessionKey",
  "channel",
  "status",
  "dueEarliestAt",
  "dueLatestAt",
  "record",
];

export function fromRow(row: CommitmentRow): Commitment {
  return {
    id: row.id,
    agentId: row.agent_id,
    sessionKey: row.session_key,
    channel: row.channel,
    status: checkStored(`commitment ${row.id} status`, row.status, COMMITMENT_STATUSES),
    dueEarliestAt: row.due_earliest_at,
    dueLatestAt: row.due_latest_at,
    updatedAt: row.updated_at,
    record: decodeJson(`commitment ${row.id}`, row.record_json),
  };
}

export function checkCommitmentId(id: string): string {
  return checkText("commitment id", id, 256);
}

/** The parameters of `COMMITMENT_SQL.upsert`: the whole row. */
export function upsertValues(commitment: NewCommitment, clock: Clock) {
  const c = checkOptions(commitment, KEYS, "CommitmentStore.upsert");
  const earliest = checkTime("dueEarliestAt", c.dueEarliestAt);
  const latest = checkTime("dueLatestAt", c.dueLatestAt);
  if (latest < earliest) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `commitment ${String(c.id)}: dueLatestAt is before dueEarliestAt`,
    );
  }
  const id = checkCommitmentId(c.id);
  return {
    id,
    agent_id: checkText("agentId", c.agentId, 256),
    session_key: checkText("sessionKey", c.sessionKey),
    channel: checkText("channel", c.channel, 256),
    status: checkStatus("commitment status", c.status ?? "pending", COMMITMENT_STATUSES),
    due_earliest_at: earliest,
    due_latest_at: latest,
    updated_at: clock(),
    record_json: encodeRecord(`commitment ${id}`, c.record ?? {}, 64 * 1024),
  };
}

/** The parameters of `COMMITMENT_SQL.setStatus`. */
export function setStatusParams(id: string, status: CommitmentStatus, clock: Clock) {
  return {
    id: checkCommitmentId(id),
    status: checkStatus("commitment status", status, COMMITMENT_STATUSES),
    now: clock(),
  };
}

export function noCommitment(id: string): StateError {
  return new StateError("E_NOT_FOUND", `no commitment ${id}`, { details: { id } });
}

export function dueParams(now: number, options: { limit?: number }) {
  const { limit } = checkOptions(options, ["limit"], "CommitmentStore.listDue");
  return { now: checkTime("now", now), limit: checkLimit(limit) };
}

export function bySessionParams(agentId: string, sessionKey: string, options: { limit?: number }) {
  const { limit } = checkOptions(options, ["limit"], "CommitmentStore.listBySession");
  return {
    agentId: checkText("agentId", agentId, 256),
    sessionKey: checkText("sessionKey", sessionKey),
    limit: checkLimit(limit),
  };
}
