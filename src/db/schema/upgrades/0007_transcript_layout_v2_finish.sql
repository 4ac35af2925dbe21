-- The last step of the transcript upgrade started by agent/0007_transcript_layout_v2.sql, run once
-- every event row is copied, in one transaction with foreign keys off (the two tables rebuilt
-- here are referenced by others: with foreign keys on, dropping them would cascade).

INSERT INTO transcript_blob_refs (session_no, seq, sha256)
  SELECT s.session_no, r.seq, r.sha256
  FROM transcript_blob_refs_v6 r JOIN sessions s ON s.session_id = r.session_id;

-- Memberships and facts pointed at the identity table, which is gone. A membership still goes
-- with its session (through its topic); a fact's source pointer is cleared by a trigger on
-- sessions; both stores check that an event exists before they point at it.
CREATE TABLE topic_membership_next (
  session_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  topic_id TEXT NOT NULL,
  score REAL NOT NULL DEFAULT 1 CHECK (score >= 0 AND score <= 1),
  is_primary INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
  reason TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, event_id, topic_id),
  FOREIGN KEY (session_id, topic_id) REFERENCES topics (session_id, topic_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

INSERT INTO topic_membership_next SELECT * FROM topic_membership;
DROP TABLE topic_membership;
ALTER TABLE topic_membership_next RENAME TO topic_membership;
CREATE INDEX topic_membership_topic ON topic_membership (session_id, topic_id, created_at);
CREATE UNIQUE INDEX topic_membership_primary
  ON topic_membership (session_id, event_id)
  WHERE is_primary = 1;

CREATE TABLE facts_next (
  id INTEGER PRIMARY KEY,
  fact_id TEXT NOT NULL UNIQUE,
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  category TEXT NOT NULL CHECK (category IN ('background', 'environment', 'account', 'security',
    'preference', 'project', 'decision', 'constraint')),
  value TEXT NOT NULL,
  sensitivity TEXT NOT NULL CHECK (sensitivity IN ('normal', 'sensitive', 'secret_ref')),
  recall_policy TEXT NOT NULL CHECK (recall_policy IN ('always', 'topic_bound', 'on_demand')),
  confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
  source_session_id TEXT,
  source_event_id TEXT,
  source_topic_id TEXT REFERENCES topics (topic_id) ON DELETE SET NULL,
  version INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (scope, key),
  CHECK ((source_session_id IS NULL) = (source_event_id IS NULL))
) STRICT;

INSERT INTO facts_next SELECT * FROM facts ORDER BY id;
DROP TABLE facts;
ALTER TABLE facts_next RENAME TO facts;
CREATE INDEX facts_policy ON facts (recall_policy, scope);
CREATE INDEX facts_source_event ON facts (source_session_id, source_event_id);
CREATE INDEX facts_source_topic ON facts (source_topic_id);
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
  DELETE FROM facts_fts WHERE rowid = old.id;
END;

DROP TABLE transcript_blob_refs_v6;
DROP TABLE transcript_identities_v6;
DROP TABLE transcript_events_v6;
ALTER TABLE sessions DROP COLUMN last_seq;
ALTER TABLE sessions DROP COLUMN leaf_event_id;

-- A fact keeps its text when the session it came from is deleted; only the pointer goes.
CREATE TRIGGER sessions_release_facts AFTER DELETE ON sessions BEGIN
  UPDATE facts SET source_session_id = NULL, source_event_id = NULL
  WHERE source_session_id = old.session_id;
END;

-- What the foreign keys to the identity table guaranteed, kept by triggers: a membership or a
-- fact source names an event that exists. Like the foreign keys they replace, they hold while
-- foreign keys are on (a salvage copies rows with them off, in no particular order).
CREATE TRIGGER topic_membership_event_exists BEFORE INSERT ON topic_membership
WHEN (SELECT foreign_keys FROM pragma_foreign_keys) = 1
  AND NOT EXISTS (SELECT 1 FROM transcript_events e JOIN sessions s ON s.session_no = e.session_no
                  WHERE s.session_id = new.session_id AND e.event_id = new.event_id) BEGIN
  SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: topic_membership names no event');
END;

CREATE TRIGGER facts_source_exists BEFORE INSERT ON facts
WHEN new.source_event_id IS NOT NULL AND (SELECT foreign_keys FROM pragma_foreign_keys) = 1
  AND NOT EXISTS (SELECT 1 FROM transcript_events e JOIN sessions s ON s.session_no = e.session_no
                  WHERE s.session_id = new.source_session_id AND e.event_id = new.source_event_id) BEGIN
  SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: facts source names no event');
END;

CREATE TRIGGER facts_source_exists_on_update BEFORE UPDATE OF source_session_id, source_event_id ON facts
WHEN new.source_event_id IS NOT NULL AND (SELECT foreign_keys FROM pragma_foreign_keys) = 1
  AND NOT EXISTS (SELECT 1 FROM transcript_events e JOIN sessions s ON s.session_no = e.session_no
                  WHERE s.session_id = new.source_session_id AND e.event_id = new.source_event_id) BEGIN
  SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: facts source names no event');
END;
