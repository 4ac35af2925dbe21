import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
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
import { ConversationStore } from "./conversation-store.js";

interface ConversationBindingRow {
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
const LIVE = "(expires_at IS NULL OR expires_at > @now)";

function fromRow(row: ConversationBindingRow): ConversationBinding {
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

/**
 * Which session the current conversation of a channel is bound to (`current_conversation_bindings`),
 * one row per conversation. Expired bindings vanish from reads and go at the next sweep.
 */
export class ConversationBindingStore {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly conversations: ConversationStore;
  private readonly upsert: SqlStatement<ConversationBindingRow>;
  private readonly selectOne: SqlStatement<ConversationBindingRow>;
  private readonly deleteOne: SqlStatement;
  private readonly bySession: SqlStatement<ConversationBindingRow>;
  private readonly byConversation: SqlStatement<ConversationBindingRow>;

  constructor(db: Database, options: { clock?: Clock } = {}) {
    this.db = db;
    this.clock = checkOptions(options, ["clock"], "ConversationBindingStore").clock ?? Date.now;
    this.conversations = new ConversationStore(db, { clock: this.clock });
    const columns = CONVERSATION_BINDING_COLUMNS;
    this.upsert = db.prepare(
      `INSERT INTO current_conversation_bindings (${columns.join(", ")})
       VALUES (${columns.map((c) => `@${c}`).join(", ")})
       ON CONFLICT DO UPDATE SET ${columns
         .slice(1)
         .map((c) => `${c} = excluded.${c}`)
         .join(", ")}
       RETURNING *`,
    );
    this.selectOne = db.prepare(
      `SELECT * FROM current_conversation_bindings WHERE binding_key = @key AND ${LIVE}`,
    );
    this.deleteOne = db.prepare("DELETE FROM current_conversation_bindings WHERE binding_key = ?");
    this.bySession = db.prepare(
      `SELECT * FROM current_conversation_bindings WHERE target_session_key = @sessionKey AND ${LIVE}
       ORDER BY bound_at, binding_key LIMIT @limit`,
    );
    this.byConversation = db.prepare(
      `SELECT * FROM current_conversation_bindings WHERE conversation_ref = @ref AND ${LIVE}
       ORDER BY bound_at, binding_key LIMIT @limit`,
    );
  }

  /**
   * Binds a conversation to a session, replacing any earlier binding under the same key.
   * E_NOT_FOUND when `conversationRef` names no conversation.
   */
  bind(binding: NewConversationBinding): ConversationBinding {
    const b = checkOptions(binding, KEYS, "ConversationBindingStore.bind");
    return this.db.tx(() => this.store(b));
  }

  private store(b: NewConversationBinding): ConversationBinding {
    const channel = checkText("channel", b.channel, 256);
    const accountId = optionalText("accountId", b.accountId, 256);
    const conversationId = checkText("conversationId", b.conversationId);
    const key =
      b.bindingKey === undefined
        ? `${channel}:${accountId ?? ""}:${conversationId}`
        : checkText("bindingKey", b.bindingKey);
    const now = this.clock();
    const conversationRef = this.conversationFor(b, channel, accountId, conversationId);
    const row = this.upsert.get({
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
      conversation_ref: conversationRef,
    });
    return fromRow(row as ConversationBindingRow);
  }

  private conversationFor(
    b: NewConversationBinding,
    channel: string,
    accountId: string | null,
    peerId: string,
  ): string {
    if (b.conversationRef === undefined) {
      return this.conversations.resolve({ channel, accountId: accountId ?? undefined, peerId })
        .conversationId;
    }
    const ref = checkText("conversationRef", b.conversationRef, 256);
    if (!this.conversations.get(ref)) {
      throw new StateError("E_NOT_FOUND", `no conversation ${ref} to bind`, {
        details: { conversationRef: ref },
      });
    }
    return ref;
  }

  get(bindingKey: string): ConversationBinding | undefined {
    const row = this.selectOne.get({ key: checkText("bindingKey", bindingKey), now: this.clock() });
    return row ? fromRow(row) : undefined;
  }

  unbind(bindingKey: string): boolean {
    return this.deleteOne.run(checkText("bindingKey", bindingKey)).changes > 0;
  }

  /** Live bindings that route to a session, oldest first. */
  listBySession(targetSessionKey: string, options: { limit?: number } = {}): ConversationBinding[] {
    const { limit } = checkOptions(options, ["limit"], "ConversationBindingStore.listBySession");
    return this.bySession
      .all({
        sessionKey: checkText("targetSessionKey", targetSessionKey),
        now: this.clock(),
        limit: checkLimit(limit),
      })
      .map(fromRow);
  }

  /** Live bindings made for a conversation (an id from `conversations.resolve`), oldest first. */
  listByConversation(
    conversationRef: string,
    options: { limit?: number } = {},
  ): ConversationBinding[] {
    const { limit } = checkOptions(
      options,
      ["limit"],
      "ConversationBindingStore.listByConversation",
    );
    return this.byConversation
      .all({
        ref: checkText("conversationRef", conversationRef, 256),
        now: this.clock(),
        limit: checkLimit(limit),
      })
      .map(fromRow);
  }
}
