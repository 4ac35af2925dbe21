-- The read contract for tools outside agentstate (usage meters, viewers, indexers): versioned,
-- read-only views over the tables. A `_v1` view keeps its name, columns and meaning through every
-- later change of the tables underneath; a change of meaning gets a `_v2` beside it. Tools read
-- these, never the tables. Documented in docs/read-views.md.

-- One row per session. `updated_at` is the later of the session's own last change and its last
-- event; `leaf_event_id` is where the next event attaches (null before the first one).
CREATE VIEW agentstate_sessions_v1 AS
SELECT s.session_id, s.session_key, s.created_at,
  max(s.updated_at, coalesce(t.created_at, 0)) AS updated_at,
  s.ended_at, s.reset_reason, s.reset_message, s.predecessor_id,
  coalesce(t.seq, 0) AS event_count,
  CASE WHEN s.leaf_override_seq = coalesce(t.seq, 0) THEN s.leaf_override_id
       WHEN t.event_type = 'session' THEN NULL ELSE t.event_id END AS leaf_event_id
FROM sessions s LEFT JOIN transcript_events t ON t.session_no = s.session_no
  AND t.seq = (SELECT max(seq) FROM transcript_events WHERE session_no = s.session_no);

-- One row per event, seq contiguous from 1 (the session header) within a session. `event_json` is
-- the record as appended (the legacy JSONL line), except that inline base64 payloads of 16 KiB or
-- more are replaced by a reference to agentstate_blobs_v1 (see docs/read-views.md).
CREATE VIEW agentstate_events_v1 AS
SELECT s.session_id, e.seq, e.event_id, e.event_type, e.parent_id, e.created_at, e.event_json
FROM transcript_events e JOIN sessions s ON s.session_no = e.session_no;

CREATE VIEW agentstate_blobs_v1 AS
SELECT sha256, mime_type, size_bytes, data FROM transcript_blobs;

-- Full-text search: `WHERE text MATCH '…' ORDER BY score`. Covers the events up to the index
-- watermark; the few appended since (agentstate_unindexed_events_v1) are indexed by the next
-- append batch, search or idle moment of a writer.
CREATE VIEW agentstate_search_v1 AS
SELECT s.session_id, e.seq, e.event_id, e.event_type, e.created_at, f.text AS text,
  bm25(transcript_fts) AS score
FROM transcript_fts f
JOIN transcript_events e ON e.id = f.rowid
JOIN sessions s ON s.session_no = e.session_no;

CREATE VIEW agentstate_unindexed_events_v1 AS
SELECT s.session_id, e.seq, e.event_id, e.event_type, e.created_at, e.event_json
FROM transcript_events e JOIN sessions s ON s.session_no = e.session_no
WHERE e.id > (SELECT indexed_through FROM search_index_state WHERE name = 'transcript');
