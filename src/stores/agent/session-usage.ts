import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { usageFactsOf } from "../../transcript/usage-facts.js";
import type { ColdStore } from "./cold-store.js";

/** One provider and model's usage within a session ('' for events naming none). */
export interface SessionModelUsage {
  provider: string;
  model: string;
  /** Events of every type: assistant messages under their model, the rest under ('', ''). */
  events: number;
  messages: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  cost: number;
  pricedMessages: number;
}

export interface SessionUsage {
  /** True when the events were read from the session's cold archive. */
  cold: boolean;
  /** By provider, then model. */
  models: SessionModelUsage[];
}

interface EventRow {
  event_type: string;
  event_json: string;
  created_at: number;
}

// Every event counts in `events`, so every row is read; only a message's JSON is passed over.
const HOT = `SELECT event_type, CASE WHEN event_type = 'message' THEN event_json ELSE '' END
    AS event_json, created_at
  FROM transcript_events
  WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?)`;

/**
 * A session's usage, summed from its events on each request rather than kept in a per-session
 * rollup: a session is bounded, and a per-session rollup would add a row write to every append
 * and bookkeeping to every cold move, restore and delete. CPU time on a 10,000-event session of
 * bench/usage.mjs's events (half assistant messages with usage): 46 ms hot, each message parsed
 * once and summed by `usageFactsOf` (the rules of the daily rollups' view, which reads the JSON a
 * dozen times an event and took 80 ms), and 65–75 ms cold (the archive inflated too).
 */
export class SessionUsageQuery {
  private readonly hot: SqlStatement<EventRow>;

  constructor(
    db: Database,
    private readonly cold: () => ColdStore,
  ) {
    this.hot = db.prepare(HOT);
  }

  /** Usage of `sessionId` by provider and model; no models for a session without events. */
  bySession(sessionId: string): SessionUsage {
    const rows = this.hot.all(sessionId);
    if (rows.length > 0) return { cold: false, models: sumHot(rows) };
    const archive = this.cold().open(sessionId);
    if (archive === undefined) return { cold: false, models: [] };
    if (archive === "restored") return { cold: false, models: sumHot(this.hot.all(sessionId)) };
    try {
      const sums = new Map<string, SessionModelUsage>();
      for (const archived of archive.reader.eventsAfter(0)) {
        addEvent(sums, parse(archived.eventType, archived.eventJson), archived.createdAt);
      }
      return { cold: true, models: [...sums.values()].sort(byName) };
    } finally {
      archive.close();
    }
  }
}

/**
 * Only a message can add more than a count, so no other event is parsed. Blob references stay
 * unresolved: they stand for long strings, never for usage fields.
 */
function parse(type: string, json: string): { type: string; message?: unknown } {
  return type === "message" ? (JSON.parse(json) as TranscriptEvent) : { type };
}

function sumHot(rows: readonly EventRow[]): SessionModelUsage[] {
  const sums = new Map<string, SessionModelUsage>();
  for (const row of rows) addEvent(sums, parse(row.event_type, row.event_json), row.created_at);
  return [...sums.values()].sort(byName);
}

function addEvent(
  sums: Map<string, SessionModelUsage>,
  event: { type: string; message?: unknown },
  createdAt: number,
): void {
  const { dayStartAt: _day, ...facts } = usageFactsOf(event, createdAt);
  const key = `${facts.provider}\u0000${facts.model}`;
  const sum = sums.get(key);
  if (sum === undefined) {
    sums.set(key, { ...facts, events: 1 });
    return;
  }
  sum.events += 1;
  sum.messages += facts.messages;
  sum.inputTokens += facts.inputTokens;
  sum.outputTokens += facts.outputTokens;
  sum.cacheReadTokens += facts.cacheReadTokens;
  sum.cacheWriteTokens += facts.cacheWriteTokens;
  sum.cost += facts.cost;
  sum.pricedMessages += facts.pricedMessages;
}

/** The SQL's order: provider, then model. */
function byName(a: SessionModelUsage, b: SessionModelUsage): number {
  const x = `${a.provider}\u0000${a.model}`;
  const y = `${b.provider}\u0000${b.model}`;
  return x < y ? -1 : x > y ? 1 : 0;
}
