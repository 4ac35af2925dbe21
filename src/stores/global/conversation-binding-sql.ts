import { CONVERSATION_BINDING_COLUMNS } from "./conversation-binding-rows.js";

const COLUMNS = CONVERSATION_BINDING_COLUMNS;
const LIVE = "(expires_at IS NULL OR expires_at > @now)";

/**
 * Conversation binding statements shared by `ConversationBindingStore` (SQLite) and the PostgreSQL
 * control plane: the same text on both, `@name`s turned into `$n`s on PostgreSQL. The conflict
 * target is named, as PostgreSQL needs it for an update. Lists tie-break by binding key.
 */
export const CONVERSATION_BINDING_SQL = {
  // One statement replaces every column: of two hosts binding one key at once, the later write
  // stands whole, never a mix of both.
  upsert: `INSERT INTO current_conversation_bindings (${COLUMNS.join(", ")})
      VALUES (${COLUMNS.map((c) => `@${c}`).join(", ")})
    ON CONFLICT (binding_key) DO UPDATE SET ${COLUMNS.slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(", ")}
    RETURNING *`,
  select: `SELECT * FROM current_conversation_bindings WHERE binding_key = @key AND ${LIVE}`,
  delete: "DELETE FROM current_conversation_bindings WHERE binding_key = @key",
  bySession: `SELECT * FROM current_conversation_bindings
    WHERE target_session_key = @sessionKey AND ${LIVE}
    ORDER BY bound_at, binding_key LIMIT @limit`,
  byConversation: `SELECT * FROM current_conversation_bindings
    WHERE conversation_ref = @ref AND ${LIVE}
    ORDER BY bound_at, binding_key LIMIT @limit`,
} as const;
