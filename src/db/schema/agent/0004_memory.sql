-- Memory (seed 004): what lets an agent return to an earlier line of work after an interruption
-- without replaying its transcript. Topics carry their own summaries and open loops; memberships
-- point at transcript events by {session_id, event_id} and never copy message text; facts are
-- the stable knowledge recalled into prompts, each with a sensitivity and a recall policy.

-- A line of work within a session. `labels_json` (a JSON array of lower-case labels) routes
-- topic_bound facts to the topic through fact_tags. (session_id, topic_id) is unique so that rows
-- hanging off a topic can reference both and never point at another session's topic.
CREATE TABLE topics (
  topic_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
  title TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('open', 'paused', 'closed')),
  parent_topic_id TEXT REFERENCES topics (topic_id) ON DELETE SET NULL,
  summary_short TEXT NOT NULL DEFAULT '',
  summary_long TEXT NOT NULL DEFAULT '',
  open_loops_json TEXT NOT NULL DEFAULT '[]',
  labels_json TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_active_at INTEGER NOT NULL,
  UNIQUE (session_id, topic_id)
) STRICT;

CREATE INDEX topics_session_active ON topics (session_id, last_active_at);
CREATE INDEX topics_active ON topics (last_active_at);
CREATE INDEX topics_parent ON topics (parent_topic_id);

-- Which transcript events belong to which topics. Both foreign keys cascade: deleting a session
-- (its events and identities) or a topic removes its memberships. At most one primary topic per
-- event.
CREATE TABLE topic_membership (
  session_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  topic_id TEXT NOT NULL,
  score REAL NOT NULL DEFAULT 1 CHECK (score >= 0 AND score <= 1),
  is_primary INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
  reason TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, event_id, topic_id),
  FOREIGN KEY (session_id, event_id)
    REFERENCES transcript_event_identities (session_id, event_id) ON DELETE CASCADE,
  FOREIGN KEY (session_id, topic_id) REFERENCES topics (session_id, topic_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE INDEX topic_membership_topic ON topic_membership (session_id, topic_id, created_at);
CREATE UNIQUE INDEX topic_membership_primary
  ON topic_membership (session_id, event_id)
  WHERE is_primary = 1;

-- Stable knowledge, one row per (scope, key); an upsert that changes it moves the previous
-- version to fact_history. For sensitivity 'secret_ref', `value` is where the secret lives
-- (env:NAME, keychain:…), never the secret. Facts outlive sessions: their source pointers are
-- cleared, not cascaded. The integer id doubles as the full-text index's document id.
CREATE TABLE facts (
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
  CHECK ((source_session_id IS NULL) = (source_event_id IS NULL)),
  FOREIGN KEY (source_session_id, source_event_id)
    REFERENCES transcript_event_identities (session_id, event_id) ON DELETE SET NULL
) STRICT;

CREATE INDEX facts_policy ON facts (recall_policy, scope);
CREATE INDEX facts_source_event ON facts (source_session_id, source_event_id);
CREATE INDEX facts_source_topic ON facts (source_topic_id);

-- Earlier versions of a fact. `value` is NULL where it was withheld: when a fact becomes a
-- secret_ref, plain values it held before are erased rather than kept in history.
CREATE TABLE fact_history (
  fact_id TEXT NOT NULL REFERENCES facts (fact_id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  category TEXT NOT NULL,
  value TEXT,
  sensitivity TEXT NOT NULL,
  recall_policy TEXT NOT NULL,
  confidence REAL NOT NULL,
  source_session_id TEXT,
  source_event_id TEXT,
  source_topic_id TEXT,
  valid_from INTEGER NOT NULL,
  replaced_at INTEGER NOT NULL,
  PRIMARY KEY (fact_id, version)
) STRICT, WITHOUT ROWID;

CREATE TABLE fact_tags (
  fact_id TEXT NOT NULL REFERENCES facts (fact_id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (fact_id, tag)
) STRICT, WITHOUT ROWID;

CREATE INDEX fact_tags_tag ON fact_tags (tag, fact_id);

-- Full-text index for on_demand recall over a fact's key, tags and value. A secret_ref's value is
-- never indexed: a query that matched it would confirm a guessed secret.
CREATE VIRTUAL TABLE facts_fts USING fts5 (
  text,
  content = '',
  contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
  DELETE FROM facts_fts WHERE rowid = old.id;
END;

-- Prompt-ready context kept for reuse, per session, optional topic and kind ('summary', …).
CREATE TABLE context_snapshots (
  snapshot_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
  topic_id TEXT,
  kind TEXT NOT NULL,
  content TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  FOREIGN KEY (session_id, topic_id) REFERENCES topics (session_id, topic_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX context_snapshots_latest
  ON context_snapshots (session_id, topic_id, kind, created_at);

-- Where a session stands: its active topic, last compaction and last turn.
CREATE TABLE session_state (
  session_id TEXT PRIMARY KEY REFERENCES sessions (session_id) ON DELETE CASCADE,
  active_topic_id TEXT REFERENCES topics (topic_id) ON DELETE SET NULL,
  last_compacted_at INTEGER,
  last_turn_id TEXT,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX session_state_topic ON session_state (active_topic_id);
