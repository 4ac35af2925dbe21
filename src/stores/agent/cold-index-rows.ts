// What a move hands to the cold index: rows of search text, by session. Types only, shared by the
// index (cold-index.ts), the thread that may write them (cold-thread.ts) and the rows a move reads
// (cold-rows.ts).

/** One event's indexed text, as a move copies it from the hot index. */
export interface ColdIndexRow {
  seq: number;
  text: string;
}

/** A session's rows for the cold index: those after `through` (what its claim already covers). */
export interface ColdRowsJob {
  sessionNo: number;
  sessionId: string;
  through: number;
  rows: readonly ColdIndexRow[];
}
