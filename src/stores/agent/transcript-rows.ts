import { columnsOf } from "../../db/columns.js";

/** Row shapes of the transcript tables, checked against the committed schema by a test. */
export interface SessionRow {
  session_id: string;
  session_key: string | null;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
  reset_reason: string | null;
  reset_message: string | null;
  predecessor_id: string | null;
  last_seq: number;
  leaf_event_id: string | null;
}

export interface EventRow {
  id: number;
  session_id: string;
  seq: number;
  event_json: string;
  created_at: number;
}

export interface IdentityRow {
  session_id: string;
  event_id: string;
  seq: number;
  event_type: string;
  has_parent: number;
  parent_id: string | null;
  message_idempotency_key: string | null;
  created_at: number;
}

export interface SnapshotRow {
  session_id: string;
  snapshot_id: string;
  reason: string;
  event_count: number;
  created_at: number;
  metadata_json: string;
}

export const SESSION_COLUMNS = columnsOf<SessionRow>()(
  "session_id",
  "session_key",
  "created_at",
  "updated_at",
  "ended_at",
  "reset_reason",
  "reset_message",
  "predecessor_id",
  "last_seq",
  "leaf_event_id",
);
export const EVENT_COLUMNS = columnsOf<EventRow>()(
  "id",
  "session_id",
  "seq",
  "event_json",
  "created_at",
);
export const IDENTITY_COLUMNS = columnsOf<IdentityRow>()(
  "session_id",
  "event_id",
  "seq",
  "event_type",
  "has_parent",
  "parent_id",
  "message_idempotency_key",
  "created_at",
);
export const SNAPSHOT_COLUMNS = columnsOf<SnapshotRow>()(
  "session_id",
  "snapshot_id",
  "reason",
  "event_count",
  "created_at",
  "metadata_json",
);

/** A session as callers see it. */
export interface SessionInfo {
  sessionId: string;
  sessionKey: string | null;
  createdAt: number;
  updatedAt: number;
  endedAt: number | null;
  resetReason: string | null;
  resetMessage: string | null;
  predecessorId: string | null;
  eventCount: number;
  leafEventId: string | null;
}

export function sessionFromRow(row: SessionRow): SessionInfo {
  return {
    sessionId: row.session_id,
    sessionKey: row.session_key,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    endedAt: row.ended_at,
    resetReason: row.reset_reason,
    resetMessage: row.reset_message,
    predecessorId: row.predecessor_id,
    eventCount: row.last_seq,
    leafEventId: row.leaf_event_id,
  };
}
