-- A job's runs are listed and retained by when they ran (newest first), not by when they were
-- logged: runs imported from a legacy log after live ones are older than their row ids say.
DROP INDEX cron_run_logs_job;
CREATE INDEX cron_run_logs_job_time ON cron_run_logs (job_id, ran_at, id);
