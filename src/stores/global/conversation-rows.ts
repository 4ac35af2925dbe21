import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import { type Clock, checkLimit, checkOptions, checkText, optionalText } from "../checks.js";

export interface ConversationRow {
  conversation_id: string;
  channel: string;
  account_id: string;
  peer_id: string;
  thread_id: string;
  created_at: number;
  last_seen_at: number;
}

export const CONVERSATION_COLUMNS = columnsOf<ConversationRow>()(
  "conversation_id",
  "channel",
  "account_id",
  "peer_id",
  "thread_id",
  "created_at",
  "last_seen_at",
);

/** Where a conversation happens on a platform. */
export interface ConversationAddress {
  channel: string;
  accountId?: string;
  /** The chat, user or channel on the platform. */
  peerId: string;
  threadId?: string;
}

export interface Conversation {
  conversationId: string;
  channel: string;
  accountId: string | null;
  peerId: string;
  threadId: string | null;
  createdAt: number;
  /** The last `resolve` of its address. */
  lastSeenAt: number;
}

export interface ConversationListOptions {
  channel?: string;
  limit?: number;
  before?: Conversation;
}

export function fromRow(row: ConversationRow): Conversation {
  return {
    conversationId: row.conversation_id,
    channel: row.channel,
    accountId: row.account_id === "" ? null : row.account_id,
    peerId: row.peer_id,
    threadId: row.thread_id === "" ? null : row.thread_id,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
  };
}

/** The address as stored: an absent account or thread is '' (see 0007_delivery_receipts.sql). */
export function addressParams(address: ConversationAddress, where: string) {
  const a = checkOptions(address, ["channel", "accountId", "peerId", "threadId"], where);
  return {
    channel: checkText("channel", a.channel, 256),
    accountId: optionalText("accountId", a.accountId, 256) ?? "",
    peerId: checkText("peerId", a.peerId),
    threadId: optionalText("threadId", a.threadId) ?? "",
  };
}

/** The parameters of `CONVERSATION_SQL.upsert`: a fresh id, used only if the address is new. */
export function resolveParams(address: ConversationAddress, where: string, clock: Clock) {
  return { ...addressParams(address, where), id: randomUUID(), now: clock() };
}

export function checkConversationId(conversationId: string): string {
  return checkText("conversationId", conversationId, 256);
}

/** The parameters of `CONVERSATION_SQL.page`. */
export function pageParams(options: ConversationListOptions, where: string) {
  const { channel, limit, before } = checkOptions(options, ["channel", "limit", "before"], where);
  return {
    channel: optionalText("channel", channel, 256),
    beforeAt: before?.lastSeenAt ?? Number.MAX_SAFE_INTEGER,
    beforeId: before?.conversationId ?? "",
    limit: checkLimit(limit),
  };
}
