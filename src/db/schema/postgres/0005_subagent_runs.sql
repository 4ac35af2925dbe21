-- The subagent run registry, as subagent_runs in the global SQLite schema (0002_control_plane.sql):
-- same columns, same checks, same indexes. The record stays TEXT, byte-exact. run_id compares
-- bytewise ("C"), as SQLite's BINARY does, so lists tie-break in the same order on both.
CREATE TABLE subagent_runs (
  run_id TEXT COLLATE "C" PRIMARY KEY,
  child_session_key TEXT,
  requester_session_key TEXT,
  controller_session_key TEXT,
  created_at BIGINT NOT NULL,
  ended_at BIGINT,
  cleanup_handled INTEGER NOT NULL DEFAULT 0 CHECK (cleanup_handled IN (0, 1)),
  payload_json TEXT NOT NULL
);

CREATE INDEX subagent_runs_child ON subagent_runs (child_session_key)
  WHERE child_session_key IS NOT NULL;
CREATE INDEX subagent_runs_requester ON subagent_runs (requester_session_key)
  WHERE requester_session_key IS NOT NULL;
CREATE INDEX subagent_runs_controller ON subagent_runs (controller_session_key)
  WHERE controller_session_key IS NOT NULL;
CREATE INDEX subagent_runs_unfinished ON subagent_runs (created_at) WHERE ended_at IS NULL;
CREATE INDEX subagent_runs_cleanup ON subagent_runs (ended_at)
  WHERE ended_at IS NOT NULL AND cleanup_handled = 0;
