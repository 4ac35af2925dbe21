-- Receipts looked up by session and by conversation (cp.queue.receipts), as the global SQLite
-- schema indexes them (0007_delivery_receipts.sql): without these, each lookup reads every entry
-- the queue keeps.
CREATE INDEX delivery_queue_entries_session
  ON delivery_queue_entries (session_key, enqueued_at) WHERE session_key IS NOT NULL;
CREATE INDEX delivery_queue_entries_conversation
  ON delivery_queue_entries (conversation_id, enqueued_at) WHERE conversation_id IS NOT NULL;
