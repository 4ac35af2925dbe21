import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  decodeJson,
  encodeRecord,
  expiryOf,
  optionalText,
  optionalTime,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import type { ConversationAddress } from "./conversation-rows.js";

export interface ConversationBindingRow {
  binding_key: string;
  binding_id: string;
  channel: string;
  account_id: string | null;
  conversation_id: string;
  target_session_key: string;
  status: string;
  bound_at: number;
  expires_at: number | null;
  record_json: string;
  conversation_ref: string | null;
}

export const CONVERSATION_BINDING_COLUMNS = columnsOf<ConversationBindingRow>()(
  "binding_key",
  "binding_id",
  "channel",
  "account_id",
  "conversation_id",
  "target_session_key",
  "status",
  "bound_at",
  "expires_at",
  "record_json",
  "conversation_ref",
);

export interface NewConversationBinding {
  /** Default: `channel:accountId:conversationId` (accountId empty when absent). */
  bindingKey?: string;
  /** Default: the binding key. */
  bindingId?: string;
  channel: string;
  accountId?: string;
  conversationId: string;
  /** The session that messages in this conversation are routed to. */
  targetSessionKey: string;
  /** Default `active`. */
  status?: string;
  /** Default now. */
  boundAt?: number;
  /** Time to live in ms; the binding lapses afterwards. Default: until unbound. */
  ttlMs?: number;
  record?: { [key: string]: JsonValue };
  /**
   * The `conversations` row this binding is for. Default: the conversation resolved from
   * `channel`, `accountId` and `conversationId` (as its peer, without a thread).
   */
  conversationRef?: string;
}

export interface ConversationBinding {
  bindingKey: string;
  bindingId: string;
  channel: string;
  accountId: string | null;
  conversationId: string;
  targetSessionKey: string;
  status: string;
  boundAt: number;
  expiresAt: number | null;
  record: { [key: string]: JsonValue };
  /** The `conversations` row it routes; null for a binding stored before conversations existed. */
  conversationRef: string | null;
}

const KEYS = [
  "bindingKey",
  "bindingId",
  "channel",
  "accountId",
  "conversationId",
  "targetSessionKey",
  "status",
  "boundAt",
  "ttlMs",
  "record",
  "conversationRef",
];

export function fromRow(row: ConversationBindingRow): ConversationBinding {
  return {
    bindingKey: row.binding_key,
    bindingId: row.binding_id,
    channel: row.channel,
    accountId: row.account_id,
    conversationId: row.conversation_id,
    targetSessionKey: row.target_session_key,
    status: row.status,
    boundAt: row.bound_at,
    expiresAt: row.expires_at,
    record: decodeJson(`conversation binding ${row.binding_key}`, row.record_json),
    conversationRef: row.conversation_ref,
  };
}

/** What a bind writes, checked: the row without its conversation, and how to find that. */
export interface CheckedBinding {
  row: Omit<ConversationBindingRow, "conversation_ref">;
  /** A conversation that must exist, or (when undefined) the address to resolve. */
  conversationRef: string | undefined;
  address: ConversationAddress;
}

/** Checks a bind's arguments in the order `ConversationBindingStore.bind` always has. */
export function checkBinding(binding: NewConversationBinding, clock: Clock): CheckedBinding {
  const b = checkOptions(binding, KEYS, "ConversationBindingStore.bind");
  const channel = checkText("channel", b.channel, 256);
  const accountId = optionalText("accountId", b.accountId, 256);
  const conversationId = checkText("conversationId", b.conversationId);
  const key =
    b.bindingKey === undefined
      ? `${channel}:${accountId ?? ""}:${conversationId}`
      : checkText("bindingKey", b.bindingKey);
  const now = clock();
  const conversationRef =
    b.conversationRef === undefined
      ? undefined
      : checkText("conversationRef", b.conversationRef, 256);
  const address = { channel, accountId: accountId ?? undefined, peerId: conversationId };
  const row = {
    binding_key: key,
    binding_id: b.bindingId === undefined ? key : checkText("bindingId", b.bindingId),
    channel,
    account_id: accountId,
    conversation_id: conversationId,
    target_session_key: checkText("targetSessionKey", b.targetSessionKey),
    status: b.status === undefined ? "active" : checkText("status", b.status, 64),
    bound_at: optionalTime("boundAt", b.boundAt) ?? now,
    expires_at: expiryOf(now, b.ttlMs),
    record_json: encodeRecord(`conversation binding ${key}`, b.record ?? {}, 64 * 1024),
  };
  return { row, conversationRef, address };
}

export function noConversation(ref: string): StateError {
  return new StateError("E_NOT_FOUND", `no conversation ${ref} to bind`, {
    details: { conversationRef: ref },
  });
}

export function bindingKeyParams(bindingKey: string, clock: Clock) {
  return { key: checkText("bindingKey", bindingKey), now: clock() };
}

export function checkBindingKey(bindingKey: string): string {
  return checkText("bindingKey", bindingKey);
}

export function bySessionParams(sessionKey: string, options: { limit?: number }, clock: Clock) {
  const { limit } = checkOptions(options, ["limit"], "ConversationBindingStore.listBySession");
  return {
    sessionKey: checkText("targetSessionKey", sessionKey),
    now: clock(),
    limit: checkLimit(limit),
  };
}

export function byConversationParams(ref: string, options: { limit?: number }, clock: Clock) {
  const where = "ConversationBindingStore.listByConversation";
  const { limit } = checkOptions(options, ["limit"], where);
  return { ref: checkText("conversationRef", ref, 256), now: clock(), limit: checkLimit(limit) };
}
