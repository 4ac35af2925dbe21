import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";

/** The usage columns summed per day, provider and model (see agent/0011_usage_rollups.sql). */
export const USAGE_SUMS = [
  "messages",
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_write_tokens",
  "cost",
  "priced_messages",
] as const;

const FOLD = `INSERT INTO usage_daily (day_start_at, provider, model, events, ${USAGE_SUMS.join(", ")})
  SELECT day_start_at, provider, model, count(*), ${USAGE_SUMS.map((c) => `sum(${c})`).join(", ")}
  FROM usage_event_facts WHERE id > ? AND id <= ?
  GROUP BY day_start_at, provider, model
  ON CONFLICT (day_start_at, provider, model) DO UPDATE SET events = events + excluded.events,
    ${USAGE_SUMS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`;

/**
 * The daily usage rollups, written behind a watermark (`usage_rollup_state.rolled_through`: every
 * event with an id up to it is counted, none above it). Folded in bulk by the transcript index's
 * bulk step, in its transaction; deletes are taken back out by the table's triggers.
 */
export class UsageRollup {
  private readonly selectMark: SqlStatement<{ rolled_through: number }>;
  private readonly selectBacklog: SqlStatement<{ top: number; mark: number }>;
  private readonly selectNext: SqlStatement<{ n: number; last: number | null }>;
  private readonly fold: SqlStatement;
  private readonly updateMark: SqlStatement;

  constructor(db: Database) {
    this.selectMark = db.prepare(
      "SELECT rolled_through FROM usage_rollup_state WHERE name = 'daily'",
    );
    this.selectBacklog = db.prepare(
      `SELECT (SELECT coalesce(max(id), 0) FROM transcript_events) AS top, rolled_through AS mark
       FROM usage_rollup_state WHERE name = 'daily'`,
    );
    this.selectNext = db.prepare(
      `SELECT count(*) AS n, max(id) AS last
       FROM (SELECT id FROM transcript_events WHERE id > ? ORDER BY id LIMIT ?)`,
    );
    this.fold = db.prepare(FOLD);
    this.updateMark = db.prepare(
      "UPDATE usage_rollup_state SET rolled_through = ? WHERE name = 'daily'",
    );
  }

  /** The id up to which every event is counted in the rollups. */
  mark(): number {
    return this.selectMark.get()?.rolled_through ?? 0;
  }

  /** How many event ids lie above the mark (an upper bound on the events not counted yet). */
  backlog(): number {
    const row = this.selectBacklog.get();
    return row === undefined ? 0 : Math.max(0, row.top - row.mark);
  }

  /**
   * Counts the next `limit` events above the mark and moves it past them, in the caller's
   * transaction. One statement per call, whatever the number of events: the rows of a day and
   * model are written once. Returns how many events were counted.
   */
  rollUp(limit: number): number {
    const mark = this.mark();
    const next = this.selectNext.get(mark, limit);
    if (next === undefined || next.last === null) return 0;
    this.fold.run(mark, next.last);
    this.updateMark.run(next.last);
    return next.n;
  }
}
