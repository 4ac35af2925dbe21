-- Cron jobs and their run log, as cron_jobs and cron_run_logs in the global SQLite schema
-- (0002_control_plane.sql, 0003_cron_runs_by_time.sql, 0011_cron_claims.sql): same columns, same
-- meanings. `enabled` stays 0/1 so that both backends run the same statements. job_id compares
-- bytewise ("C"), as SQLite's BINARY does, so `list` pages in the same order on both.
CREATE TABLE cron_jobs (
  job_id TEXT COLLATE "C" PRIMARY KEY,
  agent_id TEXT,
  name TEXT,
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  schedule_json TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  definition_json TEXT NOT NULL,
  next_run_at BIGINT,
  last_run_at BIGINT,
  last_status TEXT CHECK (last_status IN ('ok', 'error', 'skipped')),
  last_error TEXT,
  last_duration_ms BIGINT,
  consecutive_errors INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  claim_owner TEXT,
  claim_id TEXT,
  claim_until BIGINT
);

CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE enabled = 1 AND next_run_at IS NOT NULL;
CREATE INDEX cron_jobs_agent ON cron_jobs (agent_id);

-- No foreign key to cron_jobs: run logs of deleted jobs are still history.
CREATE TABLE cron_run_logs (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id TEXT NOT NULL,
  ran_at BIGINT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'skipped')),
  duration_ms BIGINT,
  error TEXT,
  record_json TEXT NOT NULL
);

CREATE INDEX cron_run_logs_job_time ON cron_run_logs (job_id, ran_at, id);
