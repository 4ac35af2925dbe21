-- The read view of cold_fts (agent/0013_cold_sessions.sql), beside agentstate_search_v1 and with
-- its columns: the events of sessions while they are cold, and of sessions restored since (their
-- index rows stay in cold_fts). A cold event has no row to read, so its `event_id`, `event_type`
-- and `created_at` are NULL (its `seq` names it). Not one UNION ALL view of both tables: SQLite
-- gives a `text MATCH` on a compound view to both halves only for some queries (not to
-- `SELECT count(*)`, nor to one ordered by `score` without selecting it), so queries that work
-- on agentstate_search_v1 today would fail with "unable to use function MATCH".
CREATE VIEW agentstate_cold_search_v1 AS
SELECT s.session_id, c.rowid % 4294967296 AS seq, e.event_id, e.event_type, e.created_at,
  c.text AS text, bm25(cold_fts) AS score
FROM cold_fts c
JOIN sessions s ON s.session_no = c.rowid / 4294967296
LEFT JOIN transcript_events e ON e.session_no = s.session_no AND e.seq = c.rowid % 4294967296;
