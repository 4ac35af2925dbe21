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
  session_no: number;
  leaf_override_id: string | null;
  leaf_override_seq: number | null;
}

/** A session row with its tail, as SESSION_WITH_TAIL selects it. */
export interface SessionTailRow extends SessionRow {
  last_seq: number;
  leaf_event_id: string | null;
  /** The later of `updated_at` and the time of the last event. */
  active_at: number;
}

/**
 * Sessions with their tail, read from their last event rather than stored on the row (appends do
 * not rewrite it): the last seq, the leaf (the last event, unless `branch()` moved it since), and
 * the time of the last activity. A cold session has no event rows: its cold row stands in for the
 * last one. Append a WHERE clause on `s`.
 */
export const SESSION_WITH_TAIL = `SELECT s.*, coalesce(t.seq, c.last_seq, 0) AS last_seq,
    CASE WHEN s.leaf_override_seq = coalesce(t.seq, c.last_seq, 0) THEN s.leaf_override_id
         WHEN coalesce(t.event_type, c.last_event_type) = 'session' THEN NULL
         ELSE coalesce(t.event_id, c.last_event_id) END AS leaf_event_id,
    max(s.updated_at, coalesce(t.created_at, c.last_created_at, 0)) AS active_at
  FROM sessions s LEFT JOIN transcript_events t ON t.session_no = s.session_no
    AND t.seq = (SELECT max(seq) FROM transcript_events WHERE session_no = s.session_no)
  LEFT JOIN cold_sessions c ON c.session_no = s.session_no`;

export interface EventRow {
  id: number;
  session_no: number;
  seq: number;
  event_id: string;
  event_type: string;
  parent_id: string | null;
  idempotency_key: string | null;
  created_at: number;
  event_json: string;
}

/** A cold session (agent/0013_cold_sessions.sql). */
export interface ColdSessionRow {
  session_no: number;
  archive_path: string;
  sha256: string;
  bytes: number;
  events: number;
  first_seq: number;
  last_seq: number;
  last_event_id: string | null;
  last_event_type: string | null;
  last_created_at: number;
  moved_at: number;
}

/** A session's claim on the cold index (agent/0017_cold_index_file.sql). */
export interface ColdIndexClaimRow {
  session_no: number;
  through_seq: number;
  rows: number;
  text_bytes: number;
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
  "session_no",
  "leaf_override_id",
  "leaf_override_seq",
);
export const EVENT_COLUMNS = columnsOf<EventRow>()(
  "id",
  "session_no",
  "seq",
  "event_id",
  "event_type",
  "parent_id",
  "idempotency_key",
  "created_at",
  "event_json",
);
export const COLD_SESSION_COLUMNS = columnsOf<ColdSessionRow>()(
  "session_no",
  "archive_path",
  "sha256",
  "bytes",
  "events",
  "first_seq",
  "last_seq",
  "last_event_id",
  "last_event_type",
  "last_created_at",
  "moved_at",
);
export const COLD_INDEX_CLAIM_COLUMNS = columnsOf<ColdIndexClaimRow>()(
  "session_no",
  "through_seq",
  "rows",
  "text_bytes",
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

export function sessionFromRow(row: SessionTailRow): SessionInfo {
  return {
    sessionId: row.session_id,
    sessionKey: row.session_key,
    createdAt: row.created_at,
    updatedAt: row.active_at,
    endedAt: row.ended_at,
    resetReason: row.reset_reason,
    resetMessage: row.reset_message,
    predecessorId: row.predecessor_id,
    eventCount: row.last_seq,
    leafEventId: row.leaf_event_id,
  };
}
