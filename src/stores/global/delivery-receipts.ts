import { StateError } from "../../db/errors.js";
import { checkOptions, checkText, optionalText } from "../checks.js";
import {
  DELIVERY_STATUSES,
  type DeliveryEntry,
  type DeliveryStatus,
} from "./delivery-queue-rows.js";

/**
 * What to do with a send of unknown outcome: `resend` puts it back in line; `drop` makes it a
 * dead letter (with a reason, or a default one); `{ sent: true }` records that the gateway found
 * the message on the platform.
 */
export type UnknownDecision =
  | "resend"
  | "drop"
  | { drop: string }
  | { sent: true; platformMessageId?: string };

/** The store's start-up policy for unknown sends (`reconcileUnknown`); `keep` leaves them waiting. */
export type UnknownPolicy = (entry: DeliveryEntry) => "resend" | "drop" | "keep";

export interface SettleOptions {
  /** The platform's id of the message just sent. */
  platformMessageId?: string;
}

/** What `reconcileUnknown` did, by entry id. */
export interface ReconcileReport {
  resent: string[];
  dropped: string[];
  kept: string[];
  /** Settled or failed by their late holder while the policy was deciding: left as they are. */
  changed: string[];
}

/** "Did the user get the reply?": receipts by conversation, session or agent, newest first. */
export interface ReceiptQuery {
  conversationId?: string;
  sessionKey?: string;
  agentId?: string;
  queue?: string;
  status?: DeliveryStatus;
  limit?: number;
}

export const DEFAULT_DROP_REASON = "dropped: the send's outcome was unknown";

type ResolvedDecision =
  | { kind: "resend" }
  | { kind: "drop"; error: string }
  | { kind: "sent"; platformMessageId: string | null };

export function checkDecision(decision: unknown): ResolvedDecision {
  if (decision === "resend") return { kind: "resend" };
  if (decision === "drop") return { kind: "drop", error: DEFAULT_DROP_REASON };
  if (typeof decision === "object" && decision !== null) {
    if ("drop" in decision) {
      checkOptions(decision, ["drop"], "DeliveryQueueStore.resolveUnknown");
      return { kind: "drop", error: `dropped: ${checkText("drop reason", decision.drop, 4096)}` };
    }
    if ("sent" in decision && decision.sent === true) {
      const d = checkOptions(decision, ["sent", "platformMessageId"], "resolveUnknown");
      const id = (d as { platformMessageId?: unknown }).platformMessageId;
      return { kind: "sent", platformMessageId: optionalText("platformMessageId", id, 1024) };
    }
  }
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `an unknown send's decision must be "resend", "drop", { drop: reason } or { sent: true, platformMessageId? }, got ${JSON.stringify(decision)}`,
  );
}

export function checkPolicyAnswer(answer: unknown, id: string): "resend" | "drop" | "keep" {
  if (answer === "resend" || answer === "drop" || answer === "keep") return answer;
  throw new TypeError(
    `Expected onUnknown to return "resend", "drop" or "keep" for delivery ${id}, got ${String(answer)}`,
  );
}

/** The index a receipts query walks: the most selective filter given. */
export function receiptDriver(query: ReceiptQuery) {
  if (query.conversationId !== undefined) return "receiptsByConversation" as const;
  if (query.sessionKey !== undefined) return "receiptsBySession" as const;
  if (query.agentId !== undefined) return "receiptsByAgent" as const;
  throw new StateError(
    "E_INVALID_ARGUMENT",
    "receipts need a conversationId, a sessionKey or an agentId",
  );
}

export function checkReceiptStatus(status: unknown): DeliveryStatus | null {
  if (status === undefined) return null;
  if (typeof status === "string" && (DELIVERY_STATUSES as readonly string[]).includes(status)) {
    return status as DeliveryStatus;
  }
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `status must be one of ${DELIVERY_STATUSES.join(", ")}, got ${JSON.stringify(status)}`,
  );
}
