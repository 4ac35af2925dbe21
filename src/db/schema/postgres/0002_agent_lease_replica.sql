-- As 0010_agent_lease_replica.sql in the global SQLite schema: each owned agent's replica lag,
-- as its host last reported it.
ALTER TABLE agent_leases ADD COLUMN replica_lag_ms BIGINT;
ALTER TABLE agent_leases ADD COLUMN replica_checked_at BIGINT;
