-- How far each owned agent's off-host replica is behind its last commit, as its host last saw it
-- (reported after each lease renewal): `agentstate cluster status` shows it per agent. NULL until
-- the host reported; stale once `replica_checked_at` is older than a renewal interval.
ALTER TABLE agent_leases ADD COLUMN replica_lag_ms INTEGER;
ALTER TABLE agent_leases ADD COLUMN replica_checked_at INTEGER;
