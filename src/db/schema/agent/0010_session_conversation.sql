-- The conversation of the global database (conversations.conversation_id) that a session entry
-- belongs to: another file, so no foreign key. Null for entries that were never told theirs.
ALTER TABLE session_entries ADD COLUMN conversation_id TEXT;

-- `list` walks this index newest first and tests the key prefix on its entries; with the
-- conversation in it too, filtering by conversation reads no table row it then skips (an entry's
-- JSON, stored before the column, can be tens of KB).
DROP INDEX session_entries_updated;
CREATE INDEX session_entries_updated ON session_entries (updated_at, session_key, conversation_id);
