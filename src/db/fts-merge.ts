// Full-text indexes packed: deleted rows leave their postings and delete markers in FTS5's
// segments until a merge rewrites them, so free pages alone do not give their space back.
import type { Connection } from "./free-pages.js";

/**
 * Leaf pages one merge step writes (`'merge', -N`: segments of any level with more than one are
 * merged): like a vacuum step, a short transaction of its own, so a writer of another process
 * waits a few milliseconds at most.
 */
export const FTS_MERGE_STEP_PAGES = 256;

/** The FTS5 tables of the database, by name. */
function fts5Tables(conn: Connection): string[] {
  return conn
    .prepare<{ name: string }>(
      `SELECT name FROM sqlite_schema
       WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE % USING fts5%' ORDER BY name`,
    )
    .all()
    .map((row) => row.name);
}

function totalChanges(conn: Connection): number {
  return conn.prepare<{ n: number }>("SELECT total_changes() AS n").get()?.n ?? 0;
}

/**
 * Merges each FTS5 index's segments, step by step, until a step finds nothing to merge: a merge
 * that reaches the oldest segment drops the postings of deleted rows and their delete markers
 * (measured: after a move of 9 sessions of 10 cold, transcript_fts from 6.0 MB to 1.1 MB, as
 * small as `'optimize'` makes it). Returns the steps that did work. The pages freed are left on
 * the freelist for the caller's vacuum.
 */
export function mergeFtsIndexes(conn: Connection, stepPages = FTS_MERGE_STEP_PAGES): number {
  let steps = 0;
  for (const name of fts5Tables(conn)) {
    const quoted = `"${name.replaceAll('"', '""')}"`;
    const merge = conn.prepare(`INSERT INTO ${quoted} (${quoted}, rank) VALUES ('merge', ?)`);
    for (;;) {
      const before = totalChanges(conn);
      merge.run(-stepPages);
      // FTS5's own test of progress: a step that wrote nothing changes fewer than two rows.
      if (totalChanges(conn) - before < 2) break;
      steps++;
    }
  }
  return steps;
}
