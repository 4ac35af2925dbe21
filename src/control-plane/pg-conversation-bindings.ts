import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
import {
  bindingKeyParams,
  byConversationParams,
  bySessionParams,
  type ConversationBinding,
  type ConversationBindingRow,
  checkBinding,
  checkBindingKey,
  fromRow,
  type NewConversationBinding,
  noConversation,
} from "../stores/global/conversation-binding-rows.js";
import { CONVERSATION_BINDING_SQL } from "../stores/global/conversation-binding-sql.js";
import type { ControlPlaneConversationBindings } from "./control-plane.js";
import type { PgConversations } from "./pg-conversations.js";
import { pgStatements, query, transaction } from "./pg-statements.js";

const SQL = pgStatements("conversation_bindings", {
  ...CONVERSATION_BINDING_SQL,
  delete: `${CONVERSATION_BINDING_SQL.delete} RETURNING 1 AS gone`,
});

/** Conversation bindings on PostgreSQL: `ConversationBindingStore`'s statements and checks. */
export class PgConversationBindings implements ControlPlaneConversationBindings {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly conversations: PgConversations,
  ) {}

  /**
   * The conversation is resolved (or held) and the binding written in one transaction, as on
   * SQLite; the binding is one upsert, so of two hosts binding one key the later stands whole.
   */
  async bind(binding: NewConversationBinding): Promise<ConversationBinding> {
    const { row, conversationRef, address } = checkBinding(binding, this.clock);
    return transaction(this.pool, async (client) => {
      let ref = conversationRef;
      if (ref === undefined) {
        ref = (await this.conversations.resolveOn(client, address)).conversationId;
      } else if (!(await this.conversations.hold(client, ref))) {
        throw noConversation(ref);
      }
      const values = { ...row, conversation_ref: ref };
      const [written] = await query<ConversationBindingRow>(client, SQL.upsert, values);
      return fromRow(written as ConversationBindingRow);
    });
  }

  async get(bindingKey: string): Promise<ConversationBinding | undefined> {
    const params = bindingKeyParams(bindingKey, this.clock);
    const [row] = await query<ConversationBindingRow>(this.pool, SQL.select, params);
    return row ? fromRow(row) : undefined;
  }

  async unbind(bindingKey: string): Promise<boolean> {
    const rows = await query(this.pool, SQL.delete, { key: checkBindingKey(bindingKey) });
    return rows.length > 0;
  }

  async listBySession(targetSessionKey: string, options: { limit?: number } = {}) {
    const params = bySessionParams(targetSessionKey, options, this.clock);
    return (await query<ConversationBindingRow>(this.pool, SQL.bySession, params)).map(fromRow);
  }

  async listByConversation(conversationRef: string, options: { limit?: number } = {}) {
    const params = byConversationParams(conversationRef, options, this.clock);
    const rows = await query<ConversationBindingRow>(this.pool, SQL.byConversation, params);
    return rows.map(fromRow);
  }
}
