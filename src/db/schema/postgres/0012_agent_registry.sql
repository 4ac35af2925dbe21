-- The agent registry, as agents and agent_databases in the global SQLite schema (0001_init.sql,
-- 0008): same columns, keys and cascade, so hosts sharing this control plane see one list of the
-- cluster's agents (which host owns each one stays in agent_leases). Keys compare bytewise ("C"),
-- as SQLite's BINARY does, so lists page in the same order.
CREATE TABLE agents (
  agent_id TEXT COLLATE "C" PRIMARY KEY,
  config_fingerprint TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  -- Relative to the home, so every host (and a restored home) resolves it.
  agent_db_path TEXT NOT NULL
);

CREATE TABLE agent_databases (
  agent_id TEXT COLLATE "C" PRIMARY KEY REFERENCES agents (agent_id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  schema_version BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  size_bytes BIGINT NOT NULL,
  quick_check TEXT,
  quick_checked_at BIGINT
);
