import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkLimit, checkOptions, checkText, optionalText } from "../checks.js";

interface ConversationRow {
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

function fromRow(row: ConversationRow): Conversation {
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
    // One statement: concurrent resolvers of a new address, in any process, all get the id of
    // whichever insert won, because the conflict is decided under SQLite's write lock.
    this.upsert = db.prepare(
      `INSERT INTO conversations (${CONVERSATION_COLUMNS.join(", ")})
       VALUES (@id, @channel, @accountId, @peerId, @threadId, @now, @now)
       ON CONFLICT (channel, account_id, peer_id, thread_id)
         DO UPDATE SET last_seen_at = max(last_seen_at, excluded.last_seen_at)
       RETURNING *`,
    );
    this.selectOne = db.prepare("SELECT * FROM conversations WHERE conversation_id = ?");
    this.page = db.prepare(
      `SELECT * FROM conversations
       WHERE (@channel IS NULL OR channel = @channel) AND (last_seen_at, conversation_id) < (@beforeAt, @beforeId)
       ORDER BY last_seen_at DESC, conversation_id DESC LIMIT @limit`,
    );
  }

  /** The id of the conversation at `address`, created on first sight; same address, same id. */
  resolve(address: ConversationAddress): Conversation {
    const params = addressParams(address, "ConversationStore.resolve");
    const row = this.upsert.get({ ...params, id: randomUUID(), now: this.clock() });
    return fromRow(row as ConversationRow);
  }

  get(conversationId: string): Conversation | undefined {
    const row = this.selectOne.get(checkText("conversationId", conversationId, 256));
    return row ? fromRow(row) : undefined;
  }

  /**
   * Conversations, most recently seen first, optionally of one channel; pass the last one as
   * `before` for the next page.
   */
  list(options: { channel?: string; limit?: number; before?: Conversation } = {}): Conversation[] {
    const { channel, limit, before } = checkOptions(
      options,
      ["channel", "limit", "before"],
      "ConversationStore.list",
    );
    return this.page
      .all({
        channel: optionalText("channel", channel, 256),
        beforeAt: before?.lastSeenAt ?? Number.MAX_SAFE_INTEGER,
        beforeId: before?.conversationId ?? "",
        limit: checkLimit(limit),
      })
      .map(fromRow);
  }
}
