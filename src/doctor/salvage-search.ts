import type { Database } from "../db/database.js";
import { type FactRow, searchTextOf } from "../stores/agent/fact-rows.js";
import { TranscriptIndex } from "../stores/agent/transcript-index.js";

/**
 * A salvage does not copy the full-text indexes (their pages may be the damaged ones): it indexes
 * the salvaged rows again, as the stores do. The usage rollups are counted again too: the copied
 * ones counted events that may not have been recovered.
 */
export function rebuildSearchIndexes(db: Database): void {
  // The watermark copied from the damaged file says nothing about the new, empty index.
  db.prepare("DELETE FROM transcript_fts").run();
  db.prepare("DELETE FROM transcript_fts_stale").run();
  db.prepare("UPDATE search_index_state SET indexed_through = 0 WHERE name = 'transcript'").run();
  db.prepare("DELETE FROM usage_daily").run();
  db.prepare("UPDATE usage_rollup_state SET rolled_through = 0 WHERE name = 'daily'").run();
  // Every hot event is indexed again, here: a restored session's rows in the cold index would find
  // its events twice. Only cold sessions keep their claim (their rows there are all they have).
  db.prepare(
    "DELETE FROM cold_index_claims WHERE session_no NOT IN (SELECT session_no FROM cold_sessions)",
  ).run();
  new TranscriptIndex(db).indexPending();
  db.prepare("DELETE FROM facts_fts").run();
  const insertFact = db.prepare("INSERT INTO facts_fts (rowid, text) VALUES (?, ?)");
  const facts = db.prepare<FactRow & { tags: string | null }>(
    `SELECT f.*, (SELECT group_concat(tag, char(31)) FROM fact_tags t WHERE t.fact_id = f.fact_id) AS tags
     FROM facts f`,
  );
  for (const row of facts.all()) {
    insertFact.run(row.id, searchTextOf(row, row.tags === null ? [] : row.tags.split("\u001f")));
  }
}
