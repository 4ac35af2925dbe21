-- Sessions and transcripts. Identity is always {agentId, sessionId}: the agent is the database,
-- the session is a row. No file path or locator is stored anywhere.

-- The routing slot of a conversation (e.g. agent:main:main) and its metadata, including the
-- active sessionId. `version` increments on every write: patches compare-and-swap on it.
CREATE TABLE session_entries (
  session_key TEXT PRIMARY KEY,
  entry_json TEXT NOT NULL,
  version INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX session_entries_updated ON session_entries (updated_at, session_key);

-- Sessions are first-class: reset and compaction end one row and start another.
CREATE TABLE sessions (
  session_id TEXT PRIMARY KEY,
  session_key TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  ended_at INTEGER,
  -- Why this session was started from its predecessor ('reset', 'compaction', 'fork', …).
  reset_reason TEXT,
  reset_message TEXT,
  predecessor_id TEXT REFERENCES sessions (session_id) ON DELETE SET NULL,
  -- Tail of the event log: the last seq and the current leaf of the event tree.
  last_seq INTEGER NOT NULL DEFAULT 0,
  leaf_event_id TEXT
) STRICT;

CREATE INDEX sessions_key ON sessions (session_key, created_at);
CREATE INDEX sessions_updated ON sessions (updated_at);

-- The event log of a session, one legacy-shaped record per row, seq contiguous from 1 (the
-- session header). The rowid doubles as the full-text index's document id.
CREATE TABLE transcript_events (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  event_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (session_id, seq)
) STRICT;

CREATE TABLE transcript_event_identities (
  session_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_type TEXT NOT NULL,
  has_parent INTEGER NOT NULL CHECK (has_parent IN (0, 1)),
  parent_id TEXT,
  message_idempotency_key TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, event_id),
  FOREIGN KEY (session_id, seq) REFERENCES transcript_events (session_id, seq) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX transcript_identity_seq ON transcript_event_identities (session_id, seq);
CREATE UNIQUE INDEX transcript_identity_idempotency
  ON transcript_event_identities (session_id, message_idempotency_key)
  WHERE message_idempotency_key IS NOT NULL;
CREATE INDEX transcript_identity_children
  ON transcript_event_identities (session_id, parent_id)
  WHERE has_parent = 1;

-- Large inline binary content (base64 images) moved out of event_json at append time,
-- content-addressed and shared between events and sessions.
CREATE TABLE transcript_blobs (
  sha256 TEXT PRIMARY KEY,
  mime_type TEXT,
  size_bytes INTEGER NOT NULL,
  data BLOB NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE transcript_blob_refs (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  sha256 TEXT NOT NULL REFERENCES transcript_blobs (sha256),
  PRIMARY KEY (session_id, seq, sha256),
  FOREIGN KEY (session_id, seq) REFERENCES transcript_events (session_id, seq) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE INDEX transcript_blob_refs_sha ON transcript_blob_refs (sha256);

-- Compaction checkpoints and other named points of a session's log.
CREATE TABLE transcript_snapshots (
  session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
  snapshot_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  event_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (session_id, snapshot_id)
) STRICT;

-- Full-text index over message text, tool results and summaries. Contentless: the text lives
-- once, in event_json; snippets are cut from it for the few hits a query returns.
CREATE VIRTUAL TABLE transcript_fts USING fts5 (
  text,
  content = '',
  contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER transcript_events_fts_delete AFTER DELETE ON transcript_events BEGIN
  DELETE FROM transcript_fts WHERE rowid = old.id;
END;
