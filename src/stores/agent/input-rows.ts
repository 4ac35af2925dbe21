import { columnsOf } from "../../db/columns.js";
import type { ProcessOwner } from "../../db/process-owner.js";
import { checkStored, decodeJson } from "../checks.js";
import type { JsonValue } from "../json.js";

export const INPUT_STATES = ["accepted", "claimed", "completed", "interrupted"] as const;
export type InputState = (typeof INPUT_STATES)[number];

/** What a completed input was answered with, kept so that a retried request gets the same answer. */
export interface InputOutcome {
  /** The session the turn wrote to, when it wrote one. */
  sessionId: string | null;
  /** Transcript events of the turn: those given, then those `complete` appended. */
  eventIds: string[];
  /** Outbound deliveries (delivery queue ids) that carry the reply. */
  deliveryIds: string[];
  /** Why the input was given up (`abandon`) instead of answered. */
  abandoned?: string;
  /** Anything else the gateway wants a retry to see. */
  data?: JsonValue;
}

export interface InputLease {
  owner: string;
  process: ProcessOwner;
  expiresAt: number;
}

export interface InputRecord {
  inputId: string;
  /** Arrival order: larger is later, across every session of the agent. */
  arrivalSeq: number;
  sessionKey: string;
  idempotencyKey: string;
  payload: JsonValue;
  channel: string | null;
  conversationId: string | null;
  receivedAt: number;
  acceptedAt: number;
  state: InputState;
  /** The holder while claimed; the last holder once interrupted or completed; null before. */
  lease: InputLease | null;
  /** How many times it was claimed. */
  attempts: number;
  completedAt: number | null;
  outcome: InputOutcome | null;
}

export interface InputRow {
  arrival_seq: number;
  input_id: string;
  id_chosen: number;
  session_key: string;
  idempotency_key: string;
  payload_json: string;
  channel: string | null;
  conversation_id: string | null;
  received_at: number;
  accepted_at: number;
  state: string;
  lease_owner: string | null;
  lease_owner_pid: number | null;
  lease_owner_started: number | null;
  lease_expires_at: number | null;
  attempts: number;
  completed_at: number | null;
  outcome_json: string | null;
  claim_unlisted: number;
  unlisted_from: number;
}

export const INPUT_COLUMNS = columnsOf<InputRow>()(
  "arrival_seq",
  "input_id",
  "id_chosen",
  "session_key",
  "idempotency_key",
  "payload_json",
  "channel",
  "conversation_id",
  "received_at",
  "accepted_at",
  "state",
  "lease_owner",
  "lease_owner_pid",
  "lease_owner_started",
  "lease_expires_at",
  "attempts",
  "completed_at",
  "outcome_json",
  "claim_unlisted",
  "unlisted_from",
);

function leaseOf(row: InputRow): InputLease | null {
  if (row.lease_owner === null || row.lease_owner_pid === null) return null;
  return {
    owner: row.lease_owner,
    process: { pid: row.lease_owner_pid, started: row.lease_owner_started },
    expiresAt: row.lease_expires_at ?? 0,
  };
}

export function inputFromRow(row: InputRow): InputRecord {
  const what = `input ${row.input_id}`;
  return {
    inputId: row.input_id,
    arrivalSeq: row.arrival_seq,
    sessionKey: row.session_key,
    idempotencyKey: row.idempotency_key,
    payload: decodeJson(`${what} payload`, row.payload_json),
    channel: row.channel,
    conversationId: row.conversation_id,
    receivedAt: row.received_at,
    acceptedAt: row.accepted_at,
    state: checkStored(`${what} state`, row.state, INPUT_STATES),
    lease: leaseOf(row),
    attempts: row.attempts,
    completedAt: row.completed_at,
    outcome:
      row.outcome_json === null
        ? null
        : decodeJson<InputOutcome>(`${what} outcome`, row.outcome_json),
  };
}
