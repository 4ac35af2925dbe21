-- Transcript layout 2: an append writes the event row and its two key indexes, nothing else.
--
-- * The identity columns (event id, type, parent, idempotency key) live in the event row: one
--   B-tree less per append, and the tree is read from the same rows.
-- * Events are keyed by an INTEGER session number instead of the 36-character session id: the
--   keys of every index are shorter, so more of them fit a page.
-- * The session row is no longer rewritten per append. The next seq is the last one + 1, read
--   under the write lock; the leaf is the last event unless `branch()` moved it, which it records
--   with the seq that was last at the time (`leaf_override_seq`): the override holds while no
--   event has been appended since. A session's recency is the later of `updated_at` and its last
--   event's time.
-- * Full-text indexing is no longer part of each append. `search_index_state.indexed_through`
--   is the id up to which every event is indexed; writers index the events above it in bulk
--   (once 64 are pending, or when idle) and a search first indexes them, in the transaction of
--   its MATCH, so no search misses an event committed before it.
--
-- This file only makes room: the old tables are renamed `…_v6` and the new ones created empty.
-- Their rows are copied in bounded transactions (src/db/layout-upgrade.ts), which every writable
-- open finishes before anything reads the database; its last step
-- (upgrades/0007_transcript_layout_v2_finish.sql) drops the `…_v6` tables. The search index is
-- then filled by the writers' own catch-up, in bounded batches too.

ALTER TABLE sessions ADD COLUMN session_no INTEGER;
ALTER TABLE sessions ADD COLUMN leaf_override_id TEXT;
ALTER TABLE sessions ADD COLUMN leaf_override_seq INTEGER;
-- Every existing session keeps its stored leaf as an override, valid until its next append.
UPDATE sessions SET session_no = rowid, leaf_override_id = leaf_event_id, leaf_override_seq = last_seq;
CREATE UNIQUE INDEX sessions_number ON sessions (session_no);

-- Numbers are given here rather than by each INSERT: every way a session row is created gets one.
CREATE TRIGGER sessions_numbered AFTER INSERT ON sessions WHEN new.session_no IS NULL BEGIN
  UPDATE sessions SET session_no = (SELECT coalesce(max(session_no), 0) + 1 FROM sessions)
  WHERE session_id = new.session_id;
END;

DROP TRIGGER transcript_events_fts_delete;
DROP TABLE transcript_fts;
DROP INDEX transcript_identity_seq;
DROP INDEX transcript_identity_idempotency;
DROP INDEX transcript_blob_refs_sha;
ALTER TABLE transcript_events RENAME TO transcript_events_v6;
ALTER TABLE transcript_event_identities RENAME TO transcript_identities_v6;
ALTER TABLE transcript_blob_refs RENAME TO transcript_blob_refs_v6;

-- One row per event. `id` is the full-text document id. `parent_id` is NULL for an event without
-- a parent. event_json is the last column: the key columns are read without touching its
-- overflow pages.
CREATE TABLE transcript_events (
  id INTEGER PRIMARY KEY,
  session_no INTEGER NOT NULL REFERENCES sessions (session_no) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  parent_id TEXT,
  idempotency_key TEXT,
  created_at INTEGER NOT NULL,
  event_json TEXT NOT NULL,
  UNIQUE (session_no, seq),
  UNIQUE (session_no, event_id)
) STRICT;

CREATE UNIQUE INDEX transcript_events_idempotency
  ON transcript_events (session_no, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

CREATE TABLE transcript_blob_refs (
  session_no INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  sha256 TEXT NOT NULL REFERENCES transcript_blobs (sha256),
  PRIMARY KEY (session_no, seq, sha256),
  FOREIGN KEY (session_no, seq) REFERENCES transcript_events (session_no, seq) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE INDEX transcript_blob_refs_by_sha ON transcript_blob_refs (sha256);

CREATE TABLE search_index_state (
  name TEXT PRIMARY KEY,
  indexed_through INTEGER NOT NULL
) STRICT;

INSERT INTO search_index_state (name, indexed_through) VALUES ('transcript', 0);

-- The index keeps its text (no `content = ''`): a contentless table can only drop a row with
-- `contentless_delete`, an option SQLite 3.40's shell (Debian 12's) cannot parse, and the
-- databases must stay searchable with the stock shell. The same goes for facts_fts, rebuilt
-- here and refilled by the upgrade.
CREATE VIRTUAL TABLE transcript_fts USING fts5 (
  text,
  tokenize = 'unicode61 remove_diacritics 2'
);

DROP TRIGGER facts_fts_delete;
DROP TABLE facts_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5 (
  text,
  tokenize = 'unicode61 remove_diacritics 2'
);
-- The text FactStore indexes (fact-rows.ts searchTextOf): key, category, tags, and the value
-- unless it only says where a secret lives.
INSERT INTO facts_fts (rowid, text)
  SELECT f.id, f.key || ' ' || f.category
    || coalesce(' ' || (SELECT group_concat(t.tag, ' ') FROM fact_tags t WHERE t.fact_id = f.fact_id), '')
    || ' ' || CASE WHEN f.sensitivity = 'secret_ref' THEN '' ELSE f.value END
  FROM facts f;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
  DELETE FROM facts_fts WHERE rowid = old.id;
END;

-- One trigger, its two steps in this order (two triggers on one event fire in an order SQLite
-- does not promise): drop the event's index row if it has one, then keep the mark at or below
-- the largest id left. A new event takes the largest id + 1, so once the top events are deleted
-- their ids come back; a mark left above them would count a new event as indexed.
CREATE TRIGGER transcript_events_unindex AFTER DELETE ON transcript_events BEGIN
  DELETE FROM transcript_fts WHERE rowid = old.id
    AND old.id <= (SELECT indexed_through FROM search_index_state WHERE name = 'transcript');
  UPDATE search_index_state SET indexed_through = (SELECT coalesce(max(id), 0) FROM transcript_events)
  WHERE name = 'transcript'
    AND indexed_through > (SELECT coalesce(max(id), 0) FROM transcript_events);
END;
