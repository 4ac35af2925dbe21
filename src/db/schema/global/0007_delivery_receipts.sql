-- Delivery receipts: a sent entry is kept (status 'sent') instead of deleted, so a re-run turn that
-- enqueues its reply again under the same idempotency key finds it and does not queue it twice, and
-- "did the user get the reply?" has an answer. A send is recorded as begun ('sending') before the
-- platform call; a holder that dies between the two leaves an entry whose outcome is 'unknown',
-- which is never handed out again without the gateway's decision.

-- One row per platform conversation (a chat, a channel thread). Absent account and thread are ''
-- rather than NULL: NULLs are distinct in a UNIQUE constraint, so NULL would let one conversation
-- get two ids.
CREATE TABLE conversations (
  conversation_id TEXT PRIMARY KEY,
  channel TEXT NOT NULL,
  account_id TEXT NOT NULL DEFAULT '',
  peer_id TEXT NOT NULL,
  thread_id TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  UNIQUE (channel, account_id, peer_id, thread_id)
) STRICT;

CREATE INDEX conversations_last_seen ON conversations (last_seen_at);

-- Rebuilt because SQLite cannot change a CHECK constraint in place; no table references it.
CREATE TABLE delivery_queue_entries_new (
  queue_name TEXT NOT NULL,
  id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'unknown')),
  entry_json TEXT NOT NULL,
  session_key TEXT,
  channel TEXT,
  available_at INTEGER NOT NULL,
  lease_owner TEXT,
  lease_id TEXT,
  retry_count INTEGER NOT NULL DEFAULT 0,
  last_attempt_at INTEGER,
  last_error TEXT,
  enqueued_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  failed_at INTEGER,
  idempotency_key TEXT,
  agent_id TEXT,
  conversation_id TEXT REFERENCES conversations (conversation_id),
  send_started_at INTEGER,
  settled_at INTEGER,
  platform_message_id TEXT,
  PRIMARY KEY (queue_name, id)
) STRICT;

INSERT INTO delivery_queue_entries_new (queue_name, id, status, entry_json, session_key, channel,
    available_at, lease_owner, lease_id, retry_count, last_attempt_at, last_error, enqueued_at,
    updated_at, failed_at)
  SELECT queue_name, id, status, entry_json, session_key, channel, available_at, lease_owner,
    lease_id, retry_count, last_attempt_at, last_error, enqueued_at, updated_at, failed_at
  FROM delivery_queue_entries;

DROP TABLE delivery_queue_entries;
ALTER TABLE delivery_queue_entries_new RENAME TO delivery_queue_entries;

-- Claim walks only pending rows: sent receipts kept by the thousand stay out of this index.
CREATE INDEX delivery_queue_entries_claimable ON delivery_queue_entries (queue_name, available_at)
  WHERE status = 'pending';
CREATE INDEX delivery_queue_entries_failed ON delivery_queue_entries (queue_name, failed_at)
  WHERE status = 'failed';
-- Sends in flight and sends of unknown outcome: few rows, read at gateway start-up.
CREATE INDEX delivery_queue_entries_in_flight
  ON delivery_queue_entries (queue_name, send_started_at)
  WHERE status IN ('sending', 'unknown');
CREATE UNIQUE INDEX delivery_queue_entries_idempotency
  ON delivery_queue_entries (queue_name, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX delivery_queue_entries_session ON delivery_queue_entries (session_key, enqueued_at)
  WHERE session_key IS NOT NULL;
CREATE INDEX delivery_queue_entries_conversation
  ON delivery_queue_entries (conversation_id, enqueued_at)
  WHERE conversation_id IS NOT NULL;
CREATE INDEX delivery_queue_entries_agent ON delivery_queue_entries (agent_id, enqueued_at)
  WHERE agent_id IS NOT NULL;

-- The conversation a binding was made for; NULL for bindings made before conversations existed.
ALTER TABLE current_conversation_bindings
  ADD COLUMN conversation_ref TEXT REFERENCES conversations (conversation_id);
CREATE INDEX current_conversation_bindings_conversation
  ON current_conversation_bindings (conversation_ref)
  WHERE conversation_ref IS NOT NULL;
