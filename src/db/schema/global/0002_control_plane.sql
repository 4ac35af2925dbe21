-- Control-plane ledgers: plugin state and blobs, media, cron, tasks and flows, subagent runs, the
-- delivery queue, conversation bindings and small gateway-scoped ledgers.
-- Times are INTEGER Unix milliseconds named *_at; ids are TEXT. A row with an expires_at is live
-- while expires_at > now; sweepExpired() deletes the others (every such column has an index).
-- Partial-index predicates are literals so that queries written with the same literal use them.
-- BLOB columns come last: SQLite reads a row's columns in order, so a column stored after a large
-- blob costs a walk through the blob's overflow pages.

CREATE TABLE plugin_state_entries (
  plugin_id TEXT NOT NULL,
  namespace TEXT NOT NULL,
  entry_key TEXT NOT NULL,
  value_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER,
  PRIMARY KEY (plugin_id, namespace, entry_key)
) STRICT, WITHOUT ROWID;

CREATE INDEX plugin_state_entries_expiry ON plugin_state_entries (expires_at)
  WHERE expires_at IS NOT NULL;

CREATE TABLE plugin_blob_entries (
  plugin_id TEXT NOT NULL,
  namespace TEXT NOT NULL,
  entry_key TEXT NOT NULL,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER,
  blob BLOB NOT NULL,
  PRIMARY KEY (plugin_id, namespace, entry_key)
) STRICT;

CREATE INDEX plugin_blob_entries_expiry ON plugin_blob_entries (expires_at)
  WHERE expires_at IS NOT NULL;

CREATE TABLE media_blobs (
  subdir TEXT NOT NULL,
  id TEXT NOT NULL,
  content_type TEXT,
  size_bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER,
  blob BLOB NOT NULL,
  PRIMARY KEY (subdir, id)
) STRICT;

CREATE INDEX media_blobs_expiry ON media_blobs (expires_at) WHERE expires_at IS NOT NULL;

-- definition_json is the whole job object as given (legacy fields kept verbatim); the other columns
-- are what the scheduler queries, plus the runtime state it updates after every run.
CREATE TABLE cron_jobs (
  job_id TEXT PRIMARY KEY,
  agent_id TEXT,
  name TEXT,
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  schedule_json TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  definition_json TEXT NOT NULL,
  next_run_at INTEGER,
  last_run_at INTEGER,
  last_status TEXT CHECK (last_status IN ('ok', 'error', 'skipped')),
  last_error TEXT,
  last_duration_ms INTEGER,
  consecutive_errors INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE enabled = 1 AND next_run_at IS NOT NULL;
CREATE INDEX cron_jobs_agent ON cron_jobs (agent_id);

-- No foreign key to cron_jobs: legacy run logs of deleted jobs are still history worth importing.
CREATE TABLE cron_run_logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  ran_at INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'skipped')),
  duration_ms INTEGER,
  error TEXT,
  record_json TEXT NOT NULL
) STRICT;

CREATE INDEX cron_run_logs_job ON cron_run_logs (job_id, id);

CREATE TABLE task_runs (
  task_id TEXT PRIMARY KEY,
  runtime TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'lost')),
  agent_id TEXT,
  requester_session_key TEXT,
  child_session_key TEXT,
  flow_id TEXT,
  run_id TEXT,
  label TEXT,
  error TEXT,
  record_json TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX task_runs_status ON task_runs (status, created_at);
CREATE INDEX task_runs_flow ON task_runs (flow_id) WHERE flow_id IS NOT NULL;
CREATE INDEX task_runs_requester ON task_runs (requester_session_key)
  WHERE requester_session_key IS NOT NULL;
CREATE INDEX task_runs_run ON task_runs (run_id) WHERE run_id IS NOT NULL;

-- How a task's outcome reaches its requester; it means nothing without the task, so it goes with it.
CREATE TABLE task_delivery_state (
  task_id TEXT PRIMARY KEY REFERENCES task_runs (task_id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'session_queued', 'failed',
    'parent_missing', 'not_applicable')),
  requester_origin_json TEXT,
  last_notified_at INTEGER,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX task_delivery_state_pending ON task_delivery_state (updated_at)
  WHERE status = 'pending';

CREATE TABLE flow_runs (
  flow_id TEXT PRIMARY KEY,
  owner_key TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting', 'blocked', 'succeeded',
    'failed', 'cancelled', 'lost')),
  goal TEXT NOT NULL,
  current_step TEXT,
  revision INTEGER NOT NULL DEFAULT 1,
  record_json TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  ended_at INTEGER
) STRICT;

CREATE INDEX flow_runs_status ON flow_runs (status, created_at);
CREATE INDEX flow_runs_owner ON flow_runs (owner_key);

CREATE TABLE subagent_runs (
  run_id TEXT PRIMARY KEY,
  child_session_key TEXT,
  requester_session_key TEXT,
  controller_session_key TEXT,
  created_at INTEGER NOT NULL,
  ended_at INTEGER,
  cleanup_handled INTEGER NOT NULL DEFAULT 0 CHECK (cleanup_handled IN (0, 1)),
  payload_json TEXT NOT NULL
) STRICT;

CREATE INDEX subagent_runs_child ON subagent_runs (child_session_key)
  WHERE child_session_key IS NOT NULL;
CREATE INDEX subagent_runs_requester ON subagent_runs (requester_session_key)
  WHERE requester_session_key IS NOT NULL;
CREATE INDEX subagent_runs_controller ON subagent_runs (controller_session_key)
  WHERE controller_session_key IS NOT NULL;
CREATE INDEX subagent_runs_unfinished ON subagent_runs (created_at) WHERE ended_at IS NULL;
CREATE INDEX subagent_runs_cleanup ON subagent_runs (ended_at)
  WHERE ended_at IS NOT NULL AND cleanup_handled = 0;

-- A pending entry is claimable once available_at <= now. Claiming sets available_at to the lease
-- expiry, so one index answers "what can be claimed now", and an entry whose claimer died becomes
-- claimable again by itself when its lease runs out. Acknowledged entries are deleted; entries that
-- failed maxAttempts times stay as status 'failed' (dead letters) until retried or deleted.
CREATE TABLE delivery_queue_entries (
  queue_name TEXT NOT NULL,
  id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'failed')),
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
  PRIMARY KEY (queue_name, id)
) STRICT;

CREATE INDEX delivery_queue_entries_claimable ON delivery_queue_entries (queue_name, available_at)
  WHERE status = 'pending';
CREATE INDEX delivery_queue_entries_failed ON delivery_queue_entries (queue_name, failed_at)
  WHERE status = 'failed';

CREATE TABLE current_conversation_bindings (
  binding_key TEXT PRIMARY KEY,
  binding_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  account_id TEXT,
  conversation_id TEXT NOT NULL,
  target_session_key TEXT NOT NULL,
  status TEXT NOT NULL,
  bound_at INTEGER NOT NULL,
  expires_at INTEGER,
  record_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX current_conversation_bindings_session
  ON current_conversation_bindings (target_session_key);
CREATE INDEX current_conversation_bindings_expiry ON current_conversation_bindings (expires_at)
  WHERE expires_at IS NOT NULL;

-- The seed names the due window and update time *_ms; here, as everywhere, times are *_at.
CREATE TABLE commitments (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  session_key TEXT NOT NULL,
  channel TEXT NOT NULL,
  status TEXT NOT NULL,
  due_earliest_at INTEGER NOT NULL,
  due_latest_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  record_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX commitments_scope ON commitments (agent_id, session_key, status, due_earliest_at);
CREATE INDEX commitments_due ON commitments (due_earliest_at) WHERE status = 'pending';

CREATE TABLE tui_last_sessions (
  scope_key TEXT PRIMARY KEY,
  session_key TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE sandbox_registry_entries (
  registry_kind TEXT NOT NULL,
  container_name TEXT NOT NULL,
  entry_json TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (registry_kind, container_name)
) STRICT, WITHOUT ROWID;

CREATE INDEX sandbox_registry_entries_updated
  ON sandbox_registry_entries (registry_kind, updated_at);
