-- Conversations and their bindings to sessions, as conversations (0007_delivery_receipts.sql) and
-- current_conversation_bindings (0002_control_plane.sql, 0007) in the global SQLite schema: same
-- columns, keys, references and indexes. JSON stays TEXT, byte-exact. Ids and keys compare
-- bytewise ("C"), as SQLite's BINARY does, so pages and lists tie-break in the same order on both.
CREATE TABLE conversations (
  conversation_id TEXT COLLATE "C" PRIMARY KEY,
  channel TEXT COLLATE "C" NOT NULL,
  account_id TEXT COLLATE "C" NOT NULL DEFAULT '',
  peer_id TEXT COLLATE "C" NOT NULL,
  thread_id TEXT COLLATE "C" NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  UNIQUE (channel, account_id, peer_id, thread_id)
);

CREATE INDEX conversations_last_seen ON conversations (last_seen_at);

CREATE TABLE current_conversation_bindings (
  binding_key TEXT COLLATE "C" PRIMARY KEY,
  binding_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  account_id TEXT,
  conversation_id TEXT NOT NULL,
  target_session_key TEXT COLLATE "C" NOT NULL,
  status TEXT NOT NULL,
  bound_at BIGINT NOT NULL,
  expires_at BIGINT,
  record_json TEXT NOT NULL DEFAULT '{}',
  conversation_ref TEXT COLLATE "C" REFERENCES conversations (conversation_id)
);

CREATE INDEX current_conversation_bindings_session
  ON current_conversation_bindings (target_session_key);
CREATE INDEX current_conversation_bindings_expiry ON current_conversation_bindings (expires_at)
  WHERE expires_at IS NOT NULL;
CREATE INDEX current_conversation_bindings_conversation
  ON current_conversation_bindings (conversation_ref)
  WHERE conversation_ref IS NOT NULL;

-- Multi-step task flows, as flow_runs in the global SQLite schema (0002_control_plane.sql): same
-- columns, status check and indexes; the record stays TEXT, byte-exact.
CREATE TABLE flow_runs (
  flow_id TEXT COLLATE "C" PRIMARY KEY,
  owner_key TEXT COLLATE "C" NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting', 'blocked', 'succeeded',
    'failed', 'cancelled', 'lost')),
  goal TEXT NOT NULL,
  current_step TEXT,
  revision INTEGER NOT NULL DEFAULT 1,
  record_json TEXT NOT NULL DEFAULT '{}',
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  ended_at BIGINT
);

CREATE INDEX flow_runs_status ON flow_runs (status, created_at);
CREATE INDEX flow_runs_owner ON flow_runs (owner_key);

-- Commitments, as commitments in the global SQLite schema (0002_control_plane.sql): same columns
-- and indexes (the due index's predicate a literal, as listDue writes it); the record stays TEXT.
CREATE TABLE commitments (
  id TEXT COLLATE "C" PRIMARY KEY,
  agent_id TEXT COLLATE "C" NOT NULL,
  session_key TEXT COLLATE "C" NOT NULL,
  channel TEXT NOT NULL,
  status TEXT NOT NULL,
  due_earliest_at BIGINT NOT NULL,
  due_latest_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  record_json TEXT NOT NULL DEFAULT '{}'
);

CREATE INDEX commitments_scope ON commitments (agent_id, session_key, status, due_earliest_at);
CREATE INDEX commitments_due ON commitments (due_earliest_at) WHERE status = 'pending';
