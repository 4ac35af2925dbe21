-- The search index of an agent's events that have been cold, in a file of its own beside the
-- archives (`agents/<id>/agent/cold/index.sqlite`), so that the agent database holds the hot data
-- alone: an idle session's index rows were about half the bytes of its events, and kept in the
-- agent database they outweighed the hot sessions several times over once most sessions were cold.
--
-- Rowids name an event for good: session_no * 2^32 + seq, as in the agent database. Which rows
-- count is the agent database's word (`cold_index_claims`: a session's rows up to its
-- `through_seq`): a move writes its rows here first and claims them in the agent database's own
-- transaction after, so rows a failed or killed move left, or rows of a deleted session, are
-- never found by a search and are dropped by the next move of that session or by `gc`.
CREATE VIRTUAL TABLE cold_fts USING fts5 (
  text,
  tokenize = 'unicode61 remove_diacritics 2'
);

-- The session each session number named when its rows were written (for the read view, which
-- cannot see the agent database).
CREATE TABLE cold_index_sessions (
  session_no INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL
) STRICT;

-- The read view for tools outside agentstate (docs/read-views.md): the columns of the agent
-- database's agentstate_search_v1. A cold event has no row to read here, so `event_id`,
-- `event_type` and `created_at` are NULL (`seq` names it).
CREATE VIEW agentstate_cold_search_v2 AS
SELECT s.session_id, c.rowid % 4294967296 AS seq, NULL AS event_id, NULL AS event_type,
  NULL AS created_at, c.text AS text, bm25(cold_fts) AS score
FROM cold_fts c
JOIN cold_index_sessions s ON s.session_no = c.rowid / 4294967296;
