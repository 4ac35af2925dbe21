// "The lean design": the transcript layout the data plane v2 targets were set on (fewer B-trees per
// append), as bare SQL: the identity folded into the event row, keyed by an INTEGER
// session number, a seq, an event-id and a partial idempotency index; the search text written to
// a text-keeping FTS5 table (as the store's, which the stock shell must read) in bulk every
// `ftsEvery` events; no per-append session tail. The benches run it beside the store as the floor
// of what the store's own layout can reach: what this bare SQL cannot do, the store cannot either.

export const LEAN_SCHEMA = `
  CREATE TABLE lean_events (
    id INTEGER PRIMARY KEY, session_no INTEGER NOT NULL, seq INTEGER NOT NULL,
    event_id TEXT NOT NULL, event_type TEXT NOT NULL, parent_id TEXT, idempotency_key TEXT,
    created_at INTEGER NOT NULL, event_json TEXT NOT NULL,
    UNIQUE (session_no, seq), UNIQUE (session_no, event_id)
  ) STRICT;
  CREATE UNIQUE INDEX lean_events_key ON lean_events (session_no, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
  CREATE VIRTUAL TABLE lean_fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');`;

/**
 * Creates the lean tables in `db` (a bare database with the library's pragmas; for
 * `PRAGMA auto_vacuum` to apply, set it before this) and returns its writers. The search text
 * waits in one list per database, as the store's watermark is one per database, not per session.
 */
export function prepareLean(db) {
  db.exec(LEAN_SCHEMA);
  const stmt = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    head: db.prepare(
      "SELECT seq, event_id FROM lean_events WHERE session_no = ? ORDER BY seq DESC LIMIT 1",
    ),
    byKey: db.prepare("SELECT id FROM lean_events WHERE session_no = ? AND idempotency_key = ?"),
    /** (session_no, seq, event_id, event_type, parent_id, idempotency_key, created_at, event_json) */
    insert: db.prepare(
      `INSERT INTO lean_events (session_no, seq, event_id, event_type, parent_id, idempotency_key,
         created_at, event_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    text: db.prepare("INSERT INTO lean_fts (rowid, text) VALUES (?, ?)"),
  };
  /** Rows not indexed yet, with their text: one list for the database unless a writer has its own. */
  const shared = [];
  const indexPending = (pending = shared) => {
    for (const [rowid, text] of pending) if (text !== "") stmt.text.run(rowid, text);
    pending.length = 0;
  };
  return {
    stmt,
    indexPending,
    /**
     * Fills `size` events in sessions of `sessionLength` (numbered from `firstSessionNo`), in one
     * transaction, indexed: the history a count is made over.
     */
    seed(rows, size, { sessionLength, firstSessionNo = 1_000_000 }) {
      stmt.begin.run();
      for (let i = 0; i < size; i++) {
        const seq = (i % sessionLength) + 1;
        const sessionNo = firstSessionNo + Math.floor(i / sessionLength);
        const r = rows[i % rows.length];
        const rowid = stmt.insert.run(sessionNo, seq, `s${i}`, "message", null, null, 0, r.json);
        shared.push([rowid.lastInsertRowid, r.text]);
      }
      indexPending();
      stmt.commit.run();
    },
    /**
     * One event per transaction to session `sessionNo`, as the store's single append: the
     * session's head read, the idempotency key looked up, the row inserted with a key and a parent;
     * ids like the store's (a random first one, then each the last + 1); the pending text indexed
     * every `ftsEvery` events (counted in `pending`: the database's list unless one is given);
     * `tail(seq, id)`, if given, run in the transaction.
     */
    writer(sessionNo, rows, { ftsEvery = 64, tail, pending = shared } = {}) {
      let id = Math.floor(Math.random() * 2 ** 31);
      return (i) => {
        const r = rows[i % rows.length];
        stmt.begin.run();
        const head = stmt.head.get(sessionNo);
        const seq = (head?.seq ?? 0) + 1;
        const key = `${sessionNo}-${seq}`;
        stmt.byKey.get(sessionNo, key);
        const eventId = (id++ >>> 0).toString(16).padStart(8, "0");
        const rowid = stmt.insert.run(
          sessionNo,
          seq,
          eventId,
          "message",
          head?.event_id ?? null,
          key,
          Date.now(),
          r.json,
        ).lastInsertRowid;
        pending.push([rowid, r.text]);
        if (pending.length >= ftsEvery) indexPending(pending);
        tail?.(seq, eventId);
        stmt.commit.run();
      };
    },
  };
}
