import type { ProcessOwner } from "../../db/process-owner.js";
import type { DanglingToolCall } from "../../transcript/dangling-tool-calls.js";
import type { Clock } from "../checks.js";
import type { JsonValue } from "../json.js";
import type { InputRecord, InputState } from "./input-rows.js";
import type { NewTranscriptEvent } from "./transcript-store.js";

/** The option and result types of `InputStore`. */
export interface InputStoreOptions {
  clock?: Clock;
  /** The process that claims (default: this one). */
  process?: ProcessOwner;
  /** Whether a lease holder's process still runs (default: `processOwnerAlive`). */
  ownerAlive?: (owner: ProcessOwner) => boolean;
}

export interface NewInput {
  /** The channel's id for the message: a redelivery with the same key is the same input. */
  idempotencyKey: string;
  payload: JsonValue;
  channel?: string | null;
  /** A conversation of the global database (no foreign key: another file). */
  conversationId?: string | null;
  /** When the channel received it (default: now). */
  receivedAt?: number;
  /**
   * Default: `in-<arrivalSeq>-<random hex>`, derived from the row so that no index of ids is
   * written. A chosen id may not have that form.
   */
  inputId?: string;
}

/** What `accept` does with a new input besides recording it; see `InputStore.accept`. */
export interface AcceptOptions {
  /** Claim it at once for a turn that runs now, as `claim` would lease it. */
  claim?: { owner: string; leaseMs: number };
  /** The session `events` are appended to (required with `events`). */
  sessionId?: string;
  /** Transcript events (the user message) appended in the accepting transaction. */
  events?: readonly NewTranscriptEvent[];
}

export interface AcceptResult {
  input: InputRecord;
  /** True when the key was accepted before: `input` is that first record, unchanged. */
  duplicate: boolean;
  /** With `events`: the ids of those appended (none for a duplicate, which appends nothing). */
  eventIds?: string[];
}

export interface ClaimOptions {
  /** How long the claim holds before a dead owner's inputs count as interrupted. */
  leaseMs: number;
  /** At most this many inputs (default 1). */
  limit?: number;
}

/** How a turn answered an input; see `InputStore.complete`. */
export interface InputCompletion {
  /** The session `events` are appended to (required with `events`). */
  sessionId?: string;
  /** The turn's last transcript events, appended in the completing transaction. */
  events?: readonly NewTranscriptEvent[];
  /** Events the turn appended before (tool calls and results), recorded in the outcome. */
  eventIds?: readonly string[];
  deliveryIds?: readonly string[];
  data?: JsonValue;
}

export interface RecoveredInputs {
  /** Every interrupted input of the session key, oldest first, those found now included. */
  interrupted: InputRecord[];
  /** The session the key's turns write to, whose current branch was checked. */
  sessionId: string | null;
  danglingToolCalls: DanglingToolCall[];
}

/** `recover` of one session key, as `recoverAll` reports it. */
export interface RecoveredSessionInputs extends RecoveredInputs {
  sessionKey: string;
}

export interface InputListOptions {
  state?: InputState;
  sessionKey?: string;
  /** Only inputs that arrived after this `arrivalSeq` (keyset pagination). */
  afterSeq?: number;
  /** Default 100. */
  limit?: number;
}
