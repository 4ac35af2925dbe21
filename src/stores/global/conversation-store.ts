import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import {
  type Conversation,
  type ConversationAddress,
  type ConversationListOptions,
  type ConversationRow,
  checkConversationId,
  fromRow,
  pageParams,
  resolveParams,
} from "./conversation-rows.js";
import { CONVERSATION_SQL } from "./conversation-sql.js";

export {
  addressParams,
  CONVERSATION_COLUMNS,
  type Conversation,
  type ConversationAddress,
  type ConversationListOptions,
} from "./conversation-rows.js";

/**
 * Conversations (`conversations`): one stable id per platform address (channel, account, peer,
 * thread), which delivery receipts and conversation bindings point at.
 */
export class ConversationStore {
  private readonly clock: Clock;
  private readonly upsert: SqlStatement<ConversationRow>;
  private readonly selectOne: SqlStatement<ConversationRow>;
  private readonly page: SqlStatement<ConversationRow>;

  constructor(db: Database, options: { clock?: Clock } = {}) {
    this.clock = checkOptions(options, ["clock"], "ConversationStore").clock ?? Date.now;
    this.upsert = db.prepare(CONVERSATION_SQL.upsert);
    this.selectOne = db.prepare(CONVERSATION_SQL.select);
    this.page = db.prepare(CONVERSATION_SQL.page);
  }

  /** The id of the conversation at `address`, created on first sight; same address, same id. */
  resolve(address: ConversationAddress): Conversation {
    const row = this.upsert.get(resolveParams(address, "ConversationStore.resolve", this.clock));
    return fromRow(row as ConversationRow);
  }

  get(conversationId: string): Conversation | undefined {
    const row = this.selectOne.get({ conversationId: checkConversationId(conversationId) });
    return row ? fromRow(row) : undefined;
  }

  /**
   * Conversations, most recently seen first, optionally of one channel; pass the last one as
   * `before` for the next page.
   */
  list(options: ConversationListOptions = {}): Conversation[] {
    return this.page.all(pageParams(options, "ConversationStore.list")).map(fromRow);
  }
}
