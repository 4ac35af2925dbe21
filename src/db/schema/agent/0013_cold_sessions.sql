-- Cold storage of idle sessions: a session's events (and the blobs only they reference) move out
-- of the hot tables into a compressed archive file in the home (src/transcript/cold-archive.ts
-- describes the format), and stay readable and searchable from there. The session row and its
-- session entry stay hot. One row per cold session; its events have no hot rows while it exists.
--
-- `archive_path` is relative to the home (`agents/<id>/agent/cold/<file>`); a reader resolves its
-- file name in the agent's own cold directory, so a home that moves keeps its archives.
-- `last_event_id`, `last_event_type` and `last_created_at` stand in for the missing last row where
-- a session's tail is read (SESSION_WITH_TAIL, agentstate_sessions_v1).
CREATE TABLE cold_sessions (
  session_no INTEGER PRIMARY KEY REFERENCES sessions (session_no) ON DELETE CASCADE,
  archive_path TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  events INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  last_event_id TEXT,
  last_event_type TEXT,
  last_created_at INTEGER NOT NULL,
  moved_at INTEGER NOT NULL
) STRICT;

-- The search index of events that have been cold: a move takes a session's rows out of
-- transcript_fts, whose rowids are transcript_events ids (reused once the top events are deleted,
-- and drawn anew by a restore), into this table under rowids that name the event for good:
-- session_no * 2^32 + seq. A restore leaves them here (the restored events are marked indexed),
-- so neither direction re-tokenizes a session twice; a search reads both tables, and takes a hit
-- of this one from the hot row when the session is hot again, else from its archive. A later move
-- of the same session adds only what was appended since. Session numbers and seqs stay below
-- 2^31, so the rowid stays within SQLite's 64-bit integers.
CREATE VIRTUAL TABLE cold_fts USING fts5 (
  text,
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER sessions_cold_unindex AFTER DELETE ON sessions BEGIN
  DELETE FROM cold_fts WHERE rowid BETWEEN old.session_no * 4294967296
    AND old.session_no * 4294967296 + 4294967295;
END;

-- A move deletes a whole session's events at once, after recording its cold row: it drops their
-- index rows in one statement and lowers the mark once (ColdRows.takeOut), instead of this
-- trigger's two statements per event (a third of a 10 MB session's move). Every other delete
-- keeps the trigger of 0007 exactly.
DROP TRIGGER transcript_events_unindex;
CREATE TRIGGER transcript_events_unindex AFTER DELETE ON transcript_events
WHEN NOT EXISTS (SELECT 1 FROM cold_sessions WHERE session_no = old.session_no) BEGIN
  DELETE FROM transcript_fts WHERE rowid = old.id
    AND old.id <= (SELECT indexed_through FROM search_index_state WHERE name = 'transcript');
  UPDATE search_index_state SET indexed_through = (SELECT coalesce(max(id), 0) FROM transcript_events)
  WHERE name = 'transcript'
    AND indexed_through > (SELECT coalesce(max(id), 0) FROM transcript_events);
END;

-- A cold session's events still count in the usage rollups: a move keeps them counted (the index
-- is caught up, rollups included, before it), and a restore marks the rows it puts back as
-- counted (TranscriptIndex.coverThrough). Only a delete of the session takes them out, and that
-- restores it first (SessionLifecycle.delete), so this trigger sees its rows. Every other delete
-- keeps the trigger of 0012 exactly.
DROP TRIGGER transcript_events_unroll;
CREATE TRIGGER transcript_events_unroll BEFORE DELETE ON transcript_events
WHEN NOT EXISTS (SELECT 1 FROM cold_sessions WHERE session_no = old.session_no) BEGIN
  UPDATE usage_daily SET events = usage_daily.events - 1,
    messages = usage_daily.messages - f.messages,
    input_tokens = usage_daily.input_tokens - f.input_tokens,
    output_tokens = usage_daily.output_tokens - f.output_tokens,
    cache_read_tokens = usage_daily.cache_read_tokens - f.cache_read_tokens,
    cache_write_tokens = usage_daily.cache_write_tokens - f.cache_write_tokens,
    cost = usage_daily.cost - f.cost,
    priced_messages = usage_daily.priced_messages - f.priced_messages
  FROM (SELECT * FROM usage_event_facts WHERE id = old.id) AS f
  WHERE old.id <= (SELECT rolled_through FROM usage_rollup_state WHERE name = 'daily')
    AND usage_daily.day_start_at = f.day_start_at AND usage_daily.provider = f.provider
    AND usage_daily.model = f.model;
  DELETE FROM usage_daily WHERE events = 0 AND (day_start_at, provider, model) =
    (SELECT day_start_at, provider, model FROM usage_event_facts WHERE id = old.id);
END;

-- The sessions view reads a cold session's tail from its cold row: same columns, same meaning.
DROP VIEW agentstate_sessions_v1;
CREATE VIEW agentstate_sessions_v1 AS
SELECT s.session_id, s.session_key, s.created_at,
  max(s.updated_at, coalesce(t.created_at, c.last_created_at, 0)) AS updated_at,
  s.ended_at, s.reset_reason, s.reset_message, s.predecessor_id,
  coalesce(t.seq, c.last_seq, 0) AS event_count,
  CASE WHEN s.leaf_override_seq = coalesce(t.seq, c.last_seq, 0) THEN s.leaf_override_id
       WHEN coalesce(t.event_type, c.last_event_type) = 'session' THEN NULL
       ELSE coalesce(t.event_id, c.last_event_id) END AS leaf_event_id
FROM sessions s LEFT JOIN transcript_events t ON t.session_no = s.session_no
  AND t.seq = (SELECT max(seq) FROM transcript_events WHERE session_no = s.session_no)
LEFT JOIN cold_sessions c ON c.session_no = s.session_no;
