import { type Clock, checkInteger } from "../checks.js";
import type { DeliveryEntry } from "./delivery-queue-rows.js";
import type { UnknownPolicy } from "./delivery-receipts.js";

export interface DeliveryQueueOptions {
  clock?: Clock;
  /** How long a claim holds an entry before others may take it (default 60 s). */
  leaseMs?: number;
  /** Failed attempts after which an entry becomes a dead letter (default 5). */
  maxAttempts?: number;
  /** Delay before the first retry; doubles with every further failure (default 1 s). */
  backoffBaseMs?: number;
  /** Longest delay between retries (default 1 h). */
  backoffMaxMs?: number;
  /** What `reconcileUnknown` does with each send of unknown outcome (default: `keep`). */
  onUnknown?: UnknownPolicy;
}

/** Keyset paging: at most `limit` entries, after the `after` entry (the last of the previous page). */
export interface PageOptions {
  limit?: number;
  after?: DeliveryEntry;
}

export interface FailOptions {
  /** Dead-letter now, without further retries (the error will not go away by waiting). */
  permanent?: boolean;
}

export const STORE_OPTIONS = [
  "clock",
  "leaseMs",
  "maxAttempts",
  "backoffBaseMs",
  "backoffMaxMs",
  "onUnknown",
];

export function queueSettings(options: DeliveryQueueOptions) {
  const day = 86_400_000;
  return Object.freeze({
    leaseMs: checkInteger("leaseMs", options.leaseMs ?? 60_000, 1, 7 * day),
    maxAttempts: checkInteger("maxAttempts", options.maxAttempts ?? 5, 1, 1000),
    backoffBaseMs: checkInteger("backoffBaseMs", options.backoffBaseMs ?? 1000, 0, day),
    backoffMaxMs: checkInteger("backoffMaxMs", options.backoffMaxMs ?? 3_600_000, 0, 30 * day),
  });
}
