-- The control plane on PostgreSQL, first slice: the delivery queue and agent leases. Column names,
-- meanings and units follow the global SQLite schema (times are BIGINT Unix milliseconds, JSON is
-- kept as text so that its bytes stay canonical). `seq` stands in for SQLite's rowid: it orders
-- entries due at the same millisecond by insertion.
CREATE TABLE delivery_queue_entries (
  queue_name TEXT NOT NULL,
  id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'unknown')),
  entry_json TEXT NOT NULL,
  session_key TEXT,
  channel TEXT,
  available_at BIGINT NOT NULL,
  lease_owner TEXT,
  lease_id TEXT,
  retry_count INTEGER NOT NULL DEFAULT 0,
  last_attempt_at BIGINT,
  last_error TEXT,
  enqueued_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  failed_at BIGINT,
  idempotency_key TEXT,
  agent_id TEXT,
  conversation_id TEXT,
  send_started_at BIGINT,
  settled_at BIGINT,
  platform_message_id TEXT,
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (queue_name, id)
);

-- Claim walks only pending rows: settled receipts kept by the thousand stay out of this index.
CREATE INDEX delivery_queue_entries_claimable
  ON delivery_queue_entries (queue_name, available_at, seq) WHERE status = 'pending';
CREATE INDEX delivery_queue_entries_failed
  ON delivery_queue_entries (queue_name, failed_at) WHERE status = 'failed';
CREATE INDEX delivery_queue_entries_in_flight
  ON delivery_queue_entries (queue_name, send_started_at) WHERE status IN ('sending', 'unknown');
CREATE UNIQUE INDEX delivery_queue_entries_idempotency
  ON delivery_queue_entries (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX delivery_queue_entries_agent
  ON delivery_queue_entries (agent_id, enqueued_at) WHERE agent_id IS NOT NULL;

-- As agent_leases in the global SQLite schema (0009_agent_leases.sql).
CREATE TABLE agent_leases (
  agent_id TEXT PRIMARY KEY,
  owner_host TEXT,
  epoch BIGINT NOT NULL,
  lease_expires_at BIGINT NOT NULL,
  acquired_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE INDEX agent_leases_owner ON agent_leases (owner_host) WHERE owner_host IS NOT NULL;
