import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
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

export const DELIVERY_STATUSES = ["pending", "failed"] as const;
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
);

export interface DeliveryEntry {
  queue: string;
  id: string;
  /** `pending` (waiting, leased, or backing off) or `failed` (dead letter). */
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
}

/** An entry this caller now holds: deliver it, then `ack` or `fail` with `leaseId`. */
export interface ClaimedDelivery extends DeliveryEntry {
  leaseOwner: string;
  leaseId: string;
  /** After this, another claimer may take the entry; `extend` pushes it back. */
  leaseExpiresAt: number;
}

export function entryFromRow(row: DeliveryQueueRow): DeliveryEntry {
  const what = `delivery ${row.queue_name}/${row.id}`;
  return {
    queue: row.queue_name,
    id: row.id,
    status: checkStored(`${what} status`, row.status, DELIVERY_STATUSES),
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
  };
}

export function claimedFromRow(row: DeliveryQueueRow): ClaimedDelivery {
  const entry = entryFromRow(row);
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
    availableAt: optionalTime("availableAt", e.availableAt) ?? now,
    retryCount: e.retryCount === undefined ? 0 : checkInteger("retryCount", e.retryCount, 0, 1e6),
    lastError: optionalErrorText(e.lastError),
    enqueuedAt: optionalTime("enqueuedAt", e.enqueuedAt) ?? now,
    now,
    failedAt: failed ? now : null,
  };
}
