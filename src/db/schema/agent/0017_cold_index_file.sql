-- The search index of cold events moves out of this file into the agent's cold index
-- (cold-index/0001_init.sql): a move writes a session's rows there first, then claims them here in
-- the transaction that takes its hot rows out. A claim covers the session's rows up to
-- `through_seq` (a restore leaves them there, and a later move adds only the events after it);
-- `rows` and `text_bytes` count what it covers, for `backup verify` and maintenance's estimates.
-- It goes with its session (a deleted session's rows there are dropped by `gc`).
CREATE TABLE cold_index_claims (
  session_no INTEGER PRIMARY KEY REFERENCES sessions (session_no) ON DELETE CASCADE,
  through_seq INTEGER NOT NULL,
  rows INTEGER NOT NULL,
  text_bytes INTEGER NOT NULL
) STRICT;

-- The read view of cold events is the cold index's own now (a view cannot read another file).
DROP VIEW agentstate_cold_search_v1;
DROP TRIGGER sessions_cold_unindex;
-- cold_fts itself stays until its rows are in the cold index: the copy runs after the migrations,
-- outside their transaction (src/db/cold-index-upgrade.ts), and drops it last.
