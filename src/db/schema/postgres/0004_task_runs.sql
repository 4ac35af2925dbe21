-- Task runs and their delivery state, as task_runs and task_delivery_state in the global SQLite
-- schema (0002_control_plane.sql): same columns, same checks, same meanings. JSON stays TEXT,
-- byte-exact. task_id compares bytewise ("C"), as SQLite's BINARY does, so lists tie-break in the
-- same order on both.
CREATE TABLE task_runs (
  task_id TEXT COLLATE "C" PRIMARY KEY,
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
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  ended_at BIGINT,
  updated_at BIGINT NOT NULL
);

CREATE INDEX task_runs_status ON task_runs (status, created_at);
CREATE INDEX task_runs_flow ON task_runs (flow_id) WHERE flow_id IS NOT NULL;
CREATE INDEX task_runs_requester ON task_runs (requester_session_key)
  WHERE requester_session_key IS NOT NULL;
CREATE INDEX task_runs_run ON task_runs (run_id) WHERE run_id IS NOT NULL;

-- How a task's outcome reaches its requester; it means nothing without the task, so it goes with it.
CREATE TABLE task_delivery_state (
  task_id TEXT COLLATE "C" PRIMARY KEY REFERENCES task_runs (task_id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'session_queued', 'failed',
    'parent_missing', 'not_applicable')),
  requester_origin_json TEXT,
  last_notified_at BIGINT,
  updated_at BIGINT NOT NULL
);

CREATE INDEX task_delivery_state_pending ON task_delivery_state (updated_at)
  WHERE status = 'pending';
