import type { Database } from "../db/database.js";
import { type FactRow, searchTextOf } from "../stores/agent/fact-rows.js";
import type { TranscriptEvent } from "../transcript/event.js";
import { searchableText } from "../transcript/search-text.js";

/**
 * The full-text indexes are contentless (their text lives only in the index), so a salvage does
 * not copy them: it indexes the salvaged rows again, as the stores do when they write them.
 */
export function rebuildSearchIndexes(db: Database): void {
  const insertEvent = db.prepare("INSERT INTO transcript_fts (rowid, text) VALUES (?, ?)");
  const events = db.prepare<{ id: number; event_json: string }>(
    "SELECT id, event_json FROM transcript_events WHERE id > ? ORDER BY id LIMIT 1000",
  );
  // In batches: the connection cannot write while a read of it is still stepping.
  for (let rows = events.all(-1); rows.length > 0; rows = events.all(rows.at(-1)?.id ?? 0)) {
    for (const row of rows) {
      const text = searchableText(JSON.parse(row.event_json) as TranscriptEvent);
      if (text !== "") insertEvent.run(row.id, text);
    }
  }
  const insertFact = db.prepare("INSERT INTO facts_fts (rowid, text) VALUES (?, ?)");
  const facts = db.prepare<FactRow & { tags: string | null }>(
    `SELECT f.*, (SELECT group_concat(tag, char(31)) FROM fact_tags t WHERE t.fact_id = f.fact_id) AS tags
     FROM facts f`,
  );
  for (const row of facts.all()) {
    insertFact.run(row.id, searchTextOf(row, row.tags === null ? [] : row.tags.split("\u001f")));
  }
}
