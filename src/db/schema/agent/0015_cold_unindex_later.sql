-- A move no longer drops its session's rows from transcript_fts in its own transaction: dropping
-- an FTS5 row tokenizes its text again, about a quarter of a 10 MB session's move. The move copies
-- the rows to cold_fts and records their ids here instead; `gc` drops them later, in batches
-- (ColdStore.purgeIndex). Until then such a row matches no event:
-- - a search and agentstate_search_v1 join transcript_fts to transcript_events by id, and these ids
--   have no event; a search that ranks before it joins leaves them out by this table;
-- - an id is only ever drawn anew above the largest id left (no AUTOINCREMENT), so no id here may
--   lie above it: a move drops at once the rows of its ids above the largest left, and so does
--   this trigger after any other delete (0013's steps first, exactly as they were).
CREATE TABLE transcript_fts_stale (
  id INTEGER PRIMARY KEY
) STRICT;

DROP TRIGGER transcript_events_unindex;
CREATE TRIGGER transcript_events_unindex AFTER DELETE ON transcript_events
WHEN NOT EXISTS (SELECT 1 FROM cold_sessions WHERE session_no = old.session_no) BEGIN
  DELETE FROM transcript_fts WHERE rowid = old.id
    AND old.id <= (SELECT indexed_through FROM search_index_state WHERE name = 'transcript');
  UPDATE search_index_state SET indexed_through = (SELECT coalesce(max(id), 0) FROM transcript_events)
  WHERE name = 'transcript'
    AND indexed_through > (SELECT coalesce(max(id), 0) FROM transcript_events);
  DELETE FROM transcript_fts WHERE rowid IN (SELECT id FROM transcript_fts_stale
    WHERE id > (SELECT coalesce(max(id), 0) FROM transcript_events));
  DELETE FROM transcript_fts_stale WHERE id > (SELECT coalesce(max(id), 0) FROM transcript_events);
END;
