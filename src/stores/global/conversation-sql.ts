import { CONVERSATION_COLUMNS } from "./conversation-rows.js";

/**
 * Conversation statements shared by `ConversationStore` (SQLite) and the PostgreSQL control plane:
 * the same text on both, `@name`s turned into `$n`s on PostgreSQL. `CASE` stands for SQLite's
 * two-argument `max`, which PostgreSQL lacks; the old row is named, as PostgreSQL needs it there.
 */
export const CONVERSATION_SQL = {
  // One statement: concurrent resolvers of a new address, in any process, all get the id of
  // whichever insert won, because the conflict is decided under the database's row lock.
  upsert: `INSERT INTO conversations (${CONVERSATION_COLUMNS.join(", ")})
      VALUES (@id, @channel, @accountId, @peerId, @threadId, @now, @now)
    ON CONFLICT (channel, account_id, peer_id, thread_id) DO UPDATE SET last_seen_at = CASE
      WHEN excluded.last_seen_at > conversations.last_seen_at THEN excluded.last_seen_at
      ELSE conversations.last_seen_at END
    RETURNING *`,
  select: "SELECT * FROM conversations WHERE conversation_id = @conversationId",
  page: `SELECT * FROM conversations
    WHERE (CAST(@channel AS TEXT) IS NULL OR channel = @channel)
      AND (last_seen_at, conversation_id) < (@beforeAt, @beforeId)
    ORDER BY last_seen_at DESC, conversation_id DESC LIMIT @limit`,
} as const;
