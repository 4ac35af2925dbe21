import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { addUsageFacts, type UsageFacts, usageFactsOf } from "../../transcript/usage-facts.js";

/** The usage columns summed per day, provider and model (see agent/0012_usage_rollups.sql). */
export const USAGE_SUMS = [
  "messages",
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_write_tokens",
  "cost",
  "priced_messages",
] as const;

const ADD = `ON CONFLICT (day_start_at, provider, model) DO UPDATE SET events = events + excluded.events,
    ${USAGE_SUMS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`;

const FOLD = `INSERT INTO usage_daily (day_start_at, provider, model, events, ${USAGE_SUMS.join(", ")})
  SELECT day_start_at, provider, model, count(*), ${USAGE_SUMS.map((c) => `sum(${c})`).join(", ")}
  FROM usage_event_facts WHERE id > ? AND id <= ?
  GROUP BY day_start_at, provider, model ${ADD}`;

const ADD_ROW = `INSERT INTO usage_daily (day_start_at, provider, model, events, ${USAGE_SUMS.join(", ")})
  VALUES (${Array(4 + USAGE_SUMS.length)
    .fill("?")
    .join(", ")}) ${ADD}`;

/**
 * Ids `first` to `last` that this connection inserted and noted, every one of them, and whose
 * rows are still the ones it wrote: the rows one append body inserted (each insert takes the
 * largest id plus one, and the body neither deletes rows nor lets other code run), or a longer
 * run that TranscriptIndex.ownedRun has shown to be intact. The bulk step takes them from memory
 * instead of reading them back to check them, as it does for rows of other transactions (another
 * connection may have deleted them and reused their ids).
 */
export interface OwnRows {
  readonly first: number;
  readonly last: number;
}

/** One day's row being summed in memory: the facts plus the count of events. */
type RowSum = UsageFacts & { events: number };

/** The facts of an appended event, with what tells its row from another that took its id. */
interface Held {
  eventId: string;
  createdAt: number;
  facts: UsageFacts;
}

interface NextRow {
  id: number;
  event_id: string;
  created_at: number;
}

/**
 * The daily usage rollups, written behind a watermark (`usage_rollup_state.rolled_through`: every
 * event with an id up to it is counted, none above it). Folded in bulk by the transcript index's
 * bulk step, in its transaction; deletes are taken back out by the table's triggers.
 *
 * The events this connection appended are summed from memory (`note`); the view, which parses each
 * event's JSON (about 45 µs an assistant message), only sums the rest: other connections' events,
 * an upgraded database's history. A held event counts only while its row is still the one it
 * wrote (same event id and time): a row deleted and its id taken by another writer's event is read
 * through the view.
 */
export class UsageRollup {
  private readonly selectMark: SqlStatement<{ rolled_through: number }>;
  private readonly selectBacklog: SqlStatement<{ top: number; mark: number }>;
  private readonly selectNext: SqlStatement<NextRow>;
  private readonly fold: SqlStatement;
  private readonly addRow: SqlStatement;
  private readonly updateMark: SqlStatement;
  /** The events this connection appended and has not folded yet, by id. */
  private readonly held = new Map<number, Held>();
  /** `db.rollbacks` when `held` was started: a rollback since may have undone its rows. */
  private heldSince = 0;

  constructor(private readonly db: Database) {
    this.selectMark = db.prepareOnUse(
      "SELECT rolled_through FROM usage_rollup_state WHERE name = 'daily'",
    );
    this.selectBacklog = db.prepareOnUse(
      `SELECT (SELECT coalesce(max(id), 0) FROM transcript_events) AS top, rolled_through AS mark
       FROM usage_rollup_state WHERE name = 'daily'`,
    );
    // Key columns only: they come before event_json, so no overflow page is read.
    this.selectNext = db.prepareOnUse(
      "SELECT id, event_id, created_at FROM transcript_events WHERE id > ? ORDER BY id LIMIT ?",
    );
    this.fold = db.prepareOnUse(FOLD);
    this.addRow = db.prepareOnUse(ADD_ROW);
    this.updateMark = db.prepareOnUse(
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

  /** Called by an append transaction with each event it wrote. */
  note(id: number, event: TranscriptEvent, createdAt: number): void {
    this.dropIfStale();
    this.held.set(id, { eventId: event.id, createdAt, facts: usageFactsOf(event, createdAt) });
  }

  /**
   * Counts the next `limit` events above the mark and moves it past them, in the caller's
   * transaction: from memory when this connection appended them all, else through the view.
   * Each day's row is written once per call. Returns how many events were counted.
   */
  rollUp(limit: number, own?: OwnRows): number {
    const mark = this.mark();
    if (own !== undefined && mark + 1 === own.first && own.last - mark <= limit) {
      const facts = this.ownFacts(own);
      if (facts !== undefined) {
        this.addAll(facts);
        this.forgetThrough(own.last);
        this.updateMark.run(own.last);
        return facts.length;
      }
    }
    const rows = this.selectNext.all(mark, limit);
    const last = rows.at(-1)?.id;
    if (last === undefined) return 0;
    this.dropIfStale();
    const facts = rows.map((row) => this.heldFactsOf(row));
    if (facts.every((f) => f !== undefined)) this.addAll(facts as UsageFacts[]);
    else this.fold.run(mark, last);
    // Held ids at or below the last folded are done, or their rows were deleted before the fold.
    this.forgetThrough(last);
    this.updateMark.run(last);
    return rows.length;
  }

  /** The held facts of `own`'s rows (see OwnRows), or undefined when one is not held. */
  private ownFacts(own: OwnRows): UsageFacts[] | undefined {
    this.dropIfStale();
    const facts: UsageFacts[] = [];
    for (let id = own.first; id <= own.last; id++) {
      const held = this.held.get(id);
      if (held === undefined) return undefined;
      facts.push(held.facts);
    }
    return facts;
  }

  private forgetThrough(id: number): void {
    for (const held of this.held.keys()) if (held <= id) this.held.delete(held);
  }

  /**
   * Moves the mark to `id` for rows already counted (a restored cold session: its events kept
   * their counts while cold). Only right after a `rollUp` that left no event above the mark but
   * those.
   */
  coverThrough(id: number): void {
    this.forgetThrough(id);
    this.updateMark.run(id);
  }

  private heldFactsOf(row: NextRow): UsageFacts | undefined {
    const held = this.held.get(row.id);
    return held?.eventId === row.event_id && held.createdAt === row.created_at
      ? held.facts
      : undefined;
  }

  private addAll(facts: readonly UsageFacts[]): void {
    const rows = new Map<string, RowSum>();
    for (const f of facts) {
      const key = `${f.dayStartAt}\u0000${f.provider}\u0000${f.model}`;
      const row = rows.get(key);
      if (row === undefined) {
        rows.set(key, { ...f, events: 1 });
        continue;
      }
      addUsageFacts(row, f);
    }
    for (const r of rows.values()) {
      this.addRow.run(
        r.dayStartAt,
        r.provider,
        r.model,
        r.events,
        r.messages,
        r.inputTokens,
        r.outputTokens,
        r.cacheReadTokens,
        r.cacheWriteTokens,
        r.cost,
        r.pricedMessages,
      );
    }
  }

  private dropIfStale(): void {
    if (this.db.rollbacks === this.heldSince) return;
    this.held.clear();
    this.heldSince = this.db.rollbacks;
  }
}
