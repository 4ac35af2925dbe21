-- Which host is running each due cron job: `claimDue` stamps a job with a fresh claim id until
-- `claim_until`, so that hosts sharing the control plane do not run it twice; `recordRun` under
-- that claim id clears it. A claim past `claim_until` may be taken over by another host.
ALTER TABLE cron_jobs ADD COLUMN claim_owner TEXT;
ALTER TABLE cron_jobs ADD COLUMN claim_id TEXT;
ALTER TABLE cron_jobs ADD COLUMN claim_until INTEGER;
