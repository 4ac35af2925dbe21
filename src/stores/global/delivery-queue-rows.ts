import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import { validateAgentId } from "../../ids.js";
import {
  checkInteger,
  checkOptions,
  checkStored,
  checkText,
  decodeJson,
  encodeJson,
  optionalErrorText,
  optionalText,
  optionalTime,
} from "../checks.js";
import type { JsonValue } from "../json.js";

/** The queues the gateway uses; any other name works too. */
export const OUTBOUND_DELIVERY_QUEUE = "outbound-delivery";
export const SESSION_DELIVERY_QUEUE = "session-delivery";

/**
 * `pending`: waiting, leased, or backing off. `sending`: the holder began the platform call.
 * `sent`: settled, kept as a receipt. `failed`: dead letter (or dropped). `unknown`: a send was
 * begun and its holder's lease lapsed before it settled: maybe sent, never handed out again by itself.
 */
export const DELIVERY_STATUSES = ["pending", "sending", "sent", "failed", "unknown"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryQueueRow {
  queue_name: string;
  id: string;
  status: string;
  entry_json: string;
  session_key: string | null;
  channel: string | null;
  available_at: number;
  lease_owner: string | null;
  lease_id: string | null;
  retry_count: number;
  last_attempt_at: number | null;
  last_error: string | null;
  enqueued_at: number;
  updated_at: number;
  failed_at: number | null;
  idempotency_key: string | null;
  agent_id: string | null;
  conversation_id: string | null;
  send_started_at: number | null;
  settled_at: number | null;
  platform_message_id: string | null;
}

export const DELIVERY_QUEUE_COLUMNS = columnsOf<DeliveryQueueRow>()(
  "queue_name",
  "id",
  "status",
  "entry_json",
  "session_key",
  "channel",
  "available_at",
  "lease_owner",
  "lease_id",
  "retry_count",
  "last_attempt_at",
  "last_error",
  "enqueued_at",
  "updated_at",
  "failed_at",
  "idempotency_key",
  "agent_id",
  "conversation_id",
  "send_started_at",
  "settled_at",
  "platform_message_id",
);

export interface DeliveryEntry {
  queue: string;
  id: string;
  /** See `DELIVERY_STATUSES`. A `sending` entry whose lease lapsed reads as `unknown`. */
  status: DeliveryStatus;
  payload: JsonValue;
  sessionKey: string | null;
  channel: string | null;
  /** When the entry can be claimed next: enqueue time, retry time, or the end of its lease. */
  availableAt: number;
  /** Who holds the lease; null when nobody does. A lease past `availableAt` has lapsed. */
  leaseOwner: string | null;
  leaseId: string | null;
  /** Failed delivery attempts so far. */
  retryCount: number;
  lastAttemptAt: number | null;
  lastError: string | null;
  enqueuedAt: number;
  updatedAt: number;
  /** When it became a dead letter. */
  failedAt: number | null;
  /** Unique per queue: enqueueing it again returns this entry instead of adding one. */
  idempotencyKey: string | null;
  agentId: string | null;
  /** The `conversations` row the reply goes to. */
  conversationId: string | null;
  /** When the holder began the platform call (`beginSend`); cleared when the send failed. */
  sendStartedAt: number | null;
  /** When it was settled as sent. */
  settledAt: number | null;
  /** The platform's id of the message sent, when the platform gave one. */
  platformMessageId: string | null;
}

/** An entry this caller now holds: deliver it, then `ack` or `fail` with `leaseId`. */
export interface ClaimedDelivery extends DeliveryEntry {
  leaseOwner: string;
  leaseId: string;
  /** After this, another claimer may take the entry; `extend` pushes it back. */
  leaseExpiresAt: number;
}

/**
 * Maps a row as of `now`: a send begun under a lease that has since lapsed is `unknown` even before
 * a writer records it so (reads stay read-only).
 */
export function entryFromRow(row: DeliveryQueueRow, now: number): DeliveryEntry {
  const what = `delivery ${row.queue_name}/${row.id}`;
  const stored = checkStored(`${what} status`, row.status, DELIVERY_STATUSES);
  return {
    queue: row.queue_name,
    id: row.id,
    status: stored === "sending" && row.available_at <= now ? "unknown" : stored,
    payload: decodeJson(`${what} payload`, row.entry_json),
    sessionKey: row.session_key,
    channel: row.channel,
    availableAt: row.available_at,
    leaseOwner: row.lease_owner,
    leaseId: row.lease_id,
    retryCount: row.retry_count,
    lastAttemptAt: row.last_attempt_at,
    lastError: row.last_error,
    enqueuedAt: row.enqueued_at,
    updatedAt: row.updated_at,
    failedAt: row.failed_at,
    idempotencyKey: row.idempotency_key,
    agentId: row.agent_id,
    conversationId: row.conversation_id,
    sendStartedAt: row.send_started_at,
    settledAt: row.settled_at,
    platformMessageId: row.platform_message_id,
  };
}

export function claimedFromRow(row: DeliveryQueueRow, now: number): ClaimedDelivery {
  const entry = entryFromRow(row, now);
  return {
    ...entry,
    leaseOwner: row.lease_owner as string,
    leaseId: row.lease_id as string,
    leaseExpiresAt: row.available_at,
  };
}

export const MAX_DELIVERY_PAYLOAD_BYTES = 1024 * 1024;

export interface NewDeliveryEntry {
  /** Default: a random UUID. Ids are unique per queue (E_CONFLICT). */
  id?: string;
  payload: JsonValue;
  sessionKey?: string;
  channel?: string;
  /**
   * A key unique per queue, e.g. the turn and reply it delivers: enqueueing an existing key
   * returns the entry already stored (whatever its status) and adds nothing.
   */
  idempotencyKey?: string;
  agentId?: string;
  /** An id from `conversations.resolve` (E_NOT_FOUND when there is no such conversation). */
  conversationId?: string;
  /** Not claimable before this time (default: at once). */
  availableAt?: number;
  /** For imports of queued or dead-lettered entries. */
  enqueuedAt?: number;
  retryCount?: number;
  lastError?: string;
  status?: "pending" | "failed";
}

const ENQUEUE_KEYS = [
  "id",
  "payload",
  "sessionKey",
  "channel",
  "idempotencyKey",
  "agentId",
  "conversationId",
  "availableAt",
  "enqueuedAt",
  "retryCount",
  "lastError",
  "status",
];

/** Checks an entry to enqueue and returns the parameters of the insert. */
export function enqueueParams(queue: string, entry: NewDeliveryEntry, now: number) {
  const e = checkOptions(entry, ENQUEUE_KEYS, "DeliveryQueueStore.enqueue");
  const id = e.id === undefined ? randomUUID() : checkText("delivery id", e.id, 256);
  if (e.status !== undefined && e.status !== "pending" && e.status !== "failed") {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `delivery status must be pending or failed, got ${JSON.stringify(e.status)}`,
    );
  }
  const failed = e.status === "failed";
  return {
    queue,
    id,
    status: failed ? "failed" : "pending",
    payload: encodeJson(`delivery ${queue}/${id} payload`, e.payload, MAX_DELIVERY_PAYLOAD_BYTES),
    sessionKey: optionalText("sessionKey", e.sessionKey),
    channel: optionalText("channel", e.channel, 256),
    idempotencyKey: optionalText("idempotencyKey", e.idempotencyKey, 512),
    agentId: e.agentId === undefined ? null : validateAgentId(e.agentId),
    conversationId: optionalText("conversationId", e.conversationId, 256),
    availableAt: optionalTime("availableAt", e.availableAt) ?? now,
    retryCount: e.retryCount === undefined ? 0 : checkInteger("retryCount", e.retryCount, 0, 1e6),
    lastError: optionalErrorText(e.lastError),
    enqueuedAt: optionalTime("enqueuedAt", e.enqueuedAt) ?? now,
    now,
    failedAt: failed ? now : null,
  };
}
