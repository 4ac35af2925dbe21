// "Today's design": the transcript layout before layout 2 (agent/0002 as 0006 left it), kept in
// the benches as a bare-SQL row to compare against: the event row, an identity row with its two
// indexes, a contentless FTS row written in each append, and the session tail rewritten per event.
// Its tables are created here, not from the library's schema files, which no longer hold them.
import { openBareDb } from "./lib.mjs";

/** The CREATE statements of `git show 6f360ad:src/db/schema/agent/0002_sessions_transcripts.sql`, minus what 0006 dropped. */
export const TODAY_SCHEMA = `
CREATE TABLE sessions (
  session_id TEXT PRIMARY KEY,
  session_key TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  ended_at INTEGER,
  reset_reason TEXT,
  reset_message TEXT,
  predecessor_id TEXT REFERENCES sessions (session_id) ON DELETE SET NULL,
  last_seq INTEGER NOT NULL DEFAULT 0,
  leaf_event_id TEXT
) STRICT;
CREATE INDEX sessions_key ON sessions (session_key, created_at);
CREATE INDEX sessions_updated ON sessions (updated_at);

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

CREATE VIRTUAL TABLE transcript_fts USING fts5 (
  text,
  content = '',
  contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER transcript_events_fts_delete AFTER DELETE ON transcript_events BEGIN
  DELETE FROM transcript_fts WHERE rowid = old.id;
END;
`;

/** A bare database (the run's engine, the library's pragmas) holding today's transcript tables. */
export function openTodayDb(path) {
  const db = openBareDb(path);
  db.exec(TODAY_SCHEMA);
  return db;
}

/**
 * Today's statements: `write(stage, …)` inserts one event at stage A (the event row), B (+ the
 * identity row), F (B + the FTS row) or C (F + the session tail update: every write of today's
 * append).
 */
export function prepareToday(db) {
  const stmt = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    session: db.prepare(
      "INSERT INTO sessions (session_id, created_at, updated_at) VALUES (?, ?, ?)",
    ),
    event: db.prepare(
      "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
    ),
    identity: db.prepare(
      `INSERT INTO transcript_event_identities
         (session_id, event_id, seq, event_type, has_parent, parent_id, message_idempotency_key, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    text: db.prepare("INSERT INTO transcript_fts (rowid, text) VALUES (?, ?)"),
    tail: db.prepare(
      "UPDATE sessions SET last_seq = ?, leaf_event_id = ?, updated_at = max(updated_at, ?) WHERE session_id = ?",
    ),
  };
  return stmt;
}

/** Page bytes of the tables whose name starts with `prefix`, by dbstat. */
export function tableBytes(db, prefix) {
  return db
    .prepare("SELECT coalesce(sum(pgsize), 0) AS bytes FROM dbstat WHERE name LIKE ? || '%'")
    .get(prefix).bytes;
}
