import { isStateError } from "../../db/errors.js";
import { validateAgentId } from "../../ids.js";
import { checkLimit, checkOptions, checkText, optionalText } from "../checks.js";
import type { LeaseParams } from "./delivery-queue-errors.js";
import type { PageOptions } from "./delivery-queue-options.js";
import type { DeliveryEntry } from "./delivery-queue-rows.js";
import {
  checkDecision,
  checkPolicyAnswer,
  checkReceiptStatus,
  type ReceiptQuery,
  type ReconcileReport,
  receiptDriver,
  type UnknownDecision,
  type UnknownPolicy,
} from "./delivery-receipts.js";

// The checks and statement parameters of the queue's send, receipt and unknown-outcome calls,
// shared by `DeliveryQueueStore` and the PostgreSQL queue so that both accept, refuse (same code,
// same message, in the same order) and bind exactly alike.

export function checkQueue(queue: unknown): string {
  return checkText("queue name", queue, 128);
}

export function checkDeliveryId(id: unknown): string {
  return checkText("delivery id", id, 256);
}

export function leaseParams(queue: string, id: string, leaseId: string): LeaseParams {
  return {
    queue: checkQueue(queue),
    id: checkDeliveryId(id),
    leaseId: checkText("lease id", leaseId, 256),
  };
}

export function checkUnknownPolicy(policy: unknown): UnknownPolicy | undefined {
  if (policy !== undefined && typeof policy !== "function") {
    throw new TypeError("Expected onUnknown to be a function");
  }
  return policy as UnknownPolicy | undefined;
}

/** The options of `settle`, checked before the entry's key (as the store always did). */
export function checkSettleOptions(options: unknown): { platformMessageId?: unknown } {
  return checkOptions(options as object, ["platformMessageId"], "DeliveryQueueStore.settle");
}

export function settleValues(options: { platformMessageId?: unknown }) {
  return { platformMessageId: optionalText("platformMessageId", options.platformMessageId, 1024) };
}

export type PageStatement = "failedPage" | "unknownPage";

/** The parameters of one keyset page: entries after `after`'s (time, id). */
export function pageParams(
  method: string,
  queue: string,
  options: PageOptions,
  timeOf: (entry: DeliveryEntry) => number | null,
  now: number,
) {
  const { limit, after } = checkOptions(
    options,
    ["limit", "after"],
    `DeliveryQueueStore.${method}`,
  );
  return {
    queue: checkQueue(queue),
    now,
    afterAt: (after && timeOf(after)) ?? -1,
    afterId: after?.id ?? "",
    limit: checkLimit(limit),
  };
}

export function unknownEverywhereParams(options: { limit?: number }, now: number) {
  const { limit } = checkOptions(options, ["limit"], "DeliveryQueueStore.listUnknownEverywhere");
  return { now, limit: checkLimit(limit) };
}

/** Which statement carries out a decision about an unknown send, and with what. */
export function resolveParams(queue: string, id: string, decision: UnknownDecision, now: number) {
  const resolved = checkDecision(decision);
  const key = { queue: checkQueue(queue), id: checkDeliveryId(id), now };
  if (resolved.kind === "resend") return { key, statement: "resolveResend" as const, params: key };
  if (resolved.kind === "drop") {
    return { key, statement: "resolveDrop" as const, params: { ...key, error: resolved.error } };
  }
  const params = { ...key, platformMessageId: resolved.platformMessageId };
  return { key, statement: "resolveSent" as const, params };
}

/** The statement a receipts query runs (its driving index) and its parameters. */
export function receiptParams(query: ReceiptQuery, now: number) {
  const q = checkOptions(
    query,
    ["conversationId", "sessionKey", "agentId", "queue", "status", "limit"],
    "DeliveryQueueStore.receipts",
  );
  const statement = receiptDriver(q);
  const params = {
    conversationId: optionalText("conversationId", q.conversationId, 256),
    sessionKey: optionalText("sessionKey", q.sessionKey),
    agentId: q.agentId === undefined ? null : validateAgentId(q.agentId),
    queue: q.queue === undefined ? null : checkQueue(q.queue),
    status: checkReceiptStatus(q.status),
    limit: checkLimit(q.limit),
    now,
  };
  return { statement, params };
}

export function emptyReconcileReport(): ReconcileReport {
  return { resent: [], dropped: [], kept: [], changed: [] };
}

/** The policy's answer for one unknown send (`keep` without a policy). */
export function policyAnswer(policy: UnknownPolicy | undefined, entry: DeliveryEntry) {
  return checkPolicyAnswer(policy?.(entry) ?? "keep", entry.id);
}

/**
 * Files an entry in the report once the policy's answer was carried out, or `error` if that
 * failed: E_CONFLICT means its late holder settled or failed it while the policy was deciding.
 */
export function recordPolicyOutcome(
  report: ReconcileReport,
  id: string,
  answer: "resend" | "drop" | "keep",
  error?: unknown,
): void {
  if (error !== undefined) {
    if (!isStateError(error, "E_CONFLICT")) throw error;
    report.changed.push(id);
    return;
  }
  (answer === "keep" ? report.kept : answer === "resend" ? report.resent : report.dropped).push(id);
}
