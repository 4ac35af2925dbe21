-- The last `PRAGMA quick_check` of each agent database, run off the open path (by `agentstate gc`,
-- one agent at a time): `status` reports it without opening every agent. NULL: never checked.
ALTER TABLE agent_databases ADD COLUMN quick_check TEXT;
ALTER TABLE agent_databases ADD COLUMN quick_checked_at INTEGER;
