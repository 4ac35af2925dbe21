import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import {
  bindingKeyParams,
  byConversationParams,
  bySessionParams,
  type CheckedBinding,
  type ConversationBinding,
  type ConversationBindingRow,
  checkBinding,
  checkBindingKey,
  fromRow,
  type NewConversationBinding,
  noConversation,
} from "./conversation-binding-rows.js";
import { CONVERSATION_BINDING_SQL } from "./conversation-binding-sql.js";
import { ConversationStore } from "./conversation-store.js";

export {
  CONVERSATION_BINDING_COLUMNS,
  type ConversationBinding,
  type NewConversationBinding,
} from "./conversation-binding-rows.js";

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
    this.upsert = db.prepare(CONVERSATION_BINDING_SQL.upsert);
    this.selectOne = db.prepare(CONVERSATION_BINDING_SQL.select);
    this.deleteOne = db.prepare(CONVERSATION_BINDING_SQL.delete);
    this.bySession = db.prepare(CONVERSATION_BINDING_SQL.bySession);
    this.byConversation = db.prepare(CONVERSATION_BINDING_SQL.byConversation);
  }

  /**
   * Binds a conversation to a session, replacing any earlier binding under the same key.
   * E_NOT_FOUND when `conversationRef` names no conversation.
   */
  bind(binding: NewConversationBinding): ConversationBinding {
    const checked = checkBinding(binding, this.clock);
    return this.db.tx(() => {
      const row = this.upsert.get({
        ...checked.row,
        conversation_ref: this.conversationFor(checked),
      });
      return fromRow(row as ConversationBindingRow);
    });
  }

  private conversationFor({ conversationRef, address }: CheckedBinding): string {
    if (conversationRef === undefined) return this.conversations.resolve(address).conversationId;
    if (!this.conversations.get(conversationRef)) throw noConversation(conversationRef);
    return conversationRef;
  }

  get(bindingKey: string): ConversationBinding | undefined {
    const row = this.selectOne.get(bindingKeyParams(bindingKey, this.clock));
    return row ? fromRow(row) : undefined;
  }

  unbind(bindingKey: string): boolean {
    return this.deleteOne.run({ key: checkBindingKey(bindingKey) }).changes > 0;
  }

  /** Live bindings that route to a session, oldest first. */
  listBySession(targetSessionKey: string, options: { limit?: number } = {}): ConversationBinding[] {
    return this.bySession.all(bySessionParams(targetSessionKey, options, this.clock)).map(fromRow);
  }

  /** Live bindings made for a conversation (an id from `conversations.resolve`), oldest first. */
  listByConversation(
    conversationRef: string,
    options: { limit?: number } = {},
  ): ConversationBinding[] {
    const params = byConversationParams(conversationRef, options, this.clock);
    return this.byConversation.all(params).map(fromRow);
  }
}
