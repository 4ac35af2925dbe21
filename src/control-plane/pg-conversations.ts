import type { Pool, PoolClient } from "pg";
import type { Clock } from "../stores/checks.js";
import {
  type Conversation,
  type ConversationAddress,
  type ConversationListOptions,
  type ConversationRow,
  checkConversationId,
  fromRow,
  pageParams,
  resolveParams,
} from "../stores/global/conversation-rows.js";
import { CONVERSATION_SQL } from "../stores/global/conversation-sql.js";
import type { ControlPlaneConversations } from "./control-plane.js";
import { pgStatements, query } from "./pg-statements.js";

// `CONVERSATION_SQL` as it is, plus the read a bind makes of the conversation it names: a key-share
// lock, so the row cannot go before the binding that references it commits.
const SQL = pgStatements("conversations", {
  ...CONVERSATION_SQL,
  selectShared: `${CONVERSATION_SQL.select} FOR KEY SHARE`,
});

/** Conversations on PostgreSQL: `ConversationStore`'s statements and checks. */
export class PgConversations implements ControlPlaneConversations {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  resolve(address: ConversationAddress): Promise<Conversation> {
    return this.resolveOn(this.pool, address);
  }

  /** `resolve` on `on`: inside a bind's transaction, on its connection. */
  async resolveOn(on: Pool | PoolClient, address: ConversationAddress): Promise<Conversation> {
    const params = resolveParams(address, "ConversationStore.resolve", this.clock);
    const [row] = await query<ConversationRow>(on, SQL.upsert, params);
    return fromRow(row as ConversationRow);
  }

  async get(conversationId: string): Promise<Conversation | undefined> {
    const params = { conversationId: checkConversationId(conversationId) };
    const [row] = await query<ConversationRow>(this.pool, SQL.select, params);
    return row ? fromRow(row) : undefined;
  }

  /** Whether the conversation exists, holding it (inside `client`'s transaction) until commit. */
  async hold(client: PoolClient, conversationId: string): Promise<boolean> {
    const rows = await query(client, SQL.selectShared, { conversationId });
    return rows.length > 0;
  }

  async list(options: ConversationListOptions = {}): Promise<Conversation[]> {
    const params = pageParams(options, "ConversationStore.list");
    return (await query<ConversationRow>(this.pool, SQL.page, params)).map(fromRow);
  }
}
