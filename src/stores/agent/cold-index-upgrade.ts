import type { Database } from "../../db/database.js";
import type { UpgradeProgressListener } from "../../db/layout-upgrade.js";
import { ColdIndex } from "./cold-index.js";

// An agent database of schema 16 or older kept the search rows of cold events itself (cold_fts,
// agent/0013); agent/0017 moved them to the cold index file. The rows are copied as text and
// indexed again there (FTS5's own tables are not written directly: a defensive connection may
// not), then one transaction of the agent database claims them and drops its copy.

/** Rows copied between progress reports. */
const PROGRESS_ROWS = 5_000;

/** True while an agent database still holds the search rows of cold events itself. */
export function coldIndexMovePending(db: Pick<Database, "prepare">): boolean {
  return (
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cold_fts'").get() !==
    undefined
  );
}

/**
 * Moves an upgraded agent database's cold search rows into its cold index file, if it still has
 * them: a no-op costing one query otherwise. Killed at any point, the next open does it again:
 * the agent database's copy goes only in the transaction that claims the file's.
 *
 * The copy runs under the cold index's write lock, taken before the agent database's snapshot it
 * reads: a process that finds the agent database's copy gone by then has nothing to do, and one
 * that copies writes what the claims of the process that finished first describe, so no move of
 * a session (which needs that lock) can come between.
 */
export function finishColdIndexMove(db: Database, onProgress?: UpgradeProgressListener): void {
  if (!coldIndexMovePending(db)) return;
  const any = db.prepare<{ any: number }>("SELECT EXISTS (SELECT 1 FROM cold_fts_docsize) AS any");
  if (any.get()?.any === 1) copyToFile(db, onProgress);
  db.tx(() => {
    if (!coldIndexMovePending(db)) return;
    db.exec(`INSERT INTO cold_index_claims (session_no, through_seq, rows, text_bytes)
      SELECT id / 4294967296, max(id % 4294967296), count(*), sum(length(CAST(c0 AS BLOB)))
      FROM cold_fts_content WHERE id / 4294967296 IN (SELECT session_no FROM sessions)
      GROUP BY id / 4294967296`);
    db.exec("DROP TABLE cold_fts");
  });
}

function copyToFile(db: Database, onProgress: UpgradeProgressListener | undefined): void {
  const index = new ColdIndex(db);
  try {
    index.exclusively((file) =>
      db.snapshot(() => {
        if (!coldIndexMovePending(db)) return;
        // Nobody else reads or writes the file while the agent database has its own copy: what a
        // killed copy left is replaced whole.
        file.exec("DELETE FROM cold_fts");
        file.exec("DELETE FROM cold_index_sessions");
        const total = db.prepare<{ n: number }>("SELECT count(*) AS n FROM cold_fts_docsize").get();
        const insert = file.prepare("INSERT INTO cold_fts (rowid, text) VALUES (?, ?)");
        const rows = db.prepare<{ rowid: number; text: string }>(
          "SELECT rowid, text FROM cold_fts ORDER BY rowid",
        );
        let done = 0;
        for (const row of rows.iterate()) {
          insert.run(row.rowid, row.text);
          if (++done % PROGRESS_ROWS === 0) {
            onProgress?.({ step: "cold search index", done, total: total?.n ?? done });
          }
        }
        onProgress?.({ step: "cold search index", done, total: done });
        const name = file.prepare(
          "INSERT INTO cold_index_sessions (session_no, session_id) VALUES (?, ?)",
        );
        const sessions = db.prepare<{ session_no: number; session_id: string }>(
          `SELECT session_no, session_id FROM sessions WHERE session_no IN
             (SELECT DISTINCT id / 4294967296 FROM cold_fts_docsize)`,
        );
        for (const s of sessions.iterate()) name.run(s.session_no, s.session_id);
      }),
    );
  } finally {
    index.close();
  }
}
