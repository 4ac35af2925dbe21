import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import type { UsageFacts } from "../../transcript/usage-facts.js";
import { USAGE_SUMS } from "./usage-rollup.js";

export const DAY_MS = 86_400_000;

/** Which UTC days to read: those holding `since` through `until` (Unix ms), both included. */
export interface UsageRange {
  since?: number;
  until?: number;
}

/** One UTC day's events of one provider and model ('' for events naming none). */
/** One day's usage of one provider and model. */
export interface DailyUsage extends UsageFacts {
  /** Events of every type: assistant messages under their model, the rest under ('', ''). */
  events: number;
}

interface DailyRow {
  day_start_at: number;
  provider: string;
  model: string;
  events: number;
  messages: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost: number;
  priced_messages: number;
}

export const USAGE_DAILY_COLUMNS = [
  "day_start_at",
  "provider",
  "model",
  "events",
  ...USAGE_SUMS,
] as const satisfies readonly (keyof DailyRow)[];

const SUMS = USAGE_SUMS.join(", ");

// One statement, so one snapshot: the rollups and the events above their mark are read as of the
// same commit, on a read-only connection too (which cannot fold the pending events itself).
const DAILY = `SELECT day_start_at, provider, model, sum(events) AS events,
    ${USAGE_SUMS.map((c) => `sum(${c}) AS ${c}`).join(", ")}
  FROM (
    SELECT day_start_at, provider, model, events, ${SUMS} FROM usage_daily
    WHERE day_start_at BETWEEN ? AND ?
    UNION ALL
    SELECT day_start_at, provider, model, 1, ${SUMS} FROM usage_event_facts
    WHERE id > (SELECT rolled_through FROM usage_rollup_state WHERE name = 'daily')
      AND day_start_at BETWEEN ? AND ?
  )
  GROUP BY day_start_at, provider, model
  ORDER BY day_start_at, provider, model`;

/** The UTC day start (Unix ms) of a time: floored, so times before 1970 fall in their own day. */
export function dayStartOf(ms: number): number {
  return ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
}

function checkTime(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value)) {
    throw new StateError("E_INVALID_ARGUMENT", `${name} must be Unix milliseconds, got ${value}`);
  }
  return dayStartOf(value);
}

/**
 * Usage per UTC day, provider and model, read from the daily rollups plus the few events not
 * rolled up yet: never stale, and as fast on a million events as on a hundred.
 */
export class UsageQuery {
  private readonly daily: SqlStatement<DailyRow>;

  constructor(db: Database) {
    this.daily = db.prepare(DAILY);
  }

  /** The days of `range` that have events, by day, provider and model. */
  byDay(range: UsageRange = {}): DailyUsage[] {
    const since = checkTime("since", range.since, Number.MIN_SAFE_INTEGER);
    const until = checkTime("until", range.until, Number.MAX_SAFE_INTEGER);
    return this.daily.all(since, until, since, until).map(fromRow);
  }
}

function fromRow(row: DailyRow): DailyUsage {
  return {
    dayStartAt: row.day_start_at,
    provider: row.provider,
    model: row.model,
    events: row.events,
    messages: row.messages,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    cacheReadTokens: row.cache_read_tokens,
    cacheWriteTokens: row.cache_write_tokens,
    cost: row.cost,
    pricedMessages: row.priced_messages,
  };
}
