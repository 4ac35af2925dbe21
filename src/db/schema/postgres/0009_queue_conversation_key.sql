-- A delivery may name its conversation (cp.conversations, 0008_conversations_flows.sql): as in the
-- global SQLite schema, that conversation must exist. The column compares bytewise ("C"), as the
-- conversations table's key does.
ALTER TABLE delivery_queue_entries ALTER COLUMN conversation_id TYPE TEXT COLLATE "C";
ALTER TABLE delivery_queue_entries ADD CONSTRAINT delivery_queue_entries_conversation_fk
  FOREIGN KEY (conversation_id) REFERENCES conversations (conversation_id);
