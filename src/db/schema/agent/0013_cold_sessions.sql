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
  fts_first_rowid INTEGER NOT NULL,
  fts_last_rowid INTEGER NOT NULL,
  moved_at INTEGER NOT NULL
) STRICT;

-- The search index of cold events. A move takes a session's rows out of transcript_fts (whose
-- rowids are transcript_events ids, and those ids are reused once the top events are deleted)
-- into this table under rowids of its own, a contiguous range per session recorded on the cold
-- row; a restore gives them back under the restored events' new ids.
CREATE VIRTUAL TABLE cold_fts USING fts5 (
  text,
  session_no UNINDEXED,
  seq UNINDEXED,
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER cold_sessions_unindex AFTER DELETE ON cold_sessions BEGIN
  DELETE FROM cold_fts WHERE rowid BETWEEN old.fts_first_rowid AND old.fts_last_rowid;
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
