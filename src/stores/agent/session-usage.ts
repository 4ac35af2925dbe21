import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { addUsageFacts, type UsageFacts, usageFactsOf } from "../../transcript/usage-facts.js";
import type { ColdStore } from "./cold-store.js";

/** One provider and model's usage within a session ('' for events naming none). */
export interface SessionModelUsage extends Omit<UsageFacts, "dayStartAt"> {
  /** Events of every type: assistant messages under their model, the rest under ('', ''). */
  events: number;
}

export interface SessionUsage {
  /** True when the events were read from the session's cold archive. */
  cold: boolean;
  /** By provider, then model. */
  models: SessionModelUsage[];
}

interface EventRow {
  id: number;
  event_type: string;
  event_json: string;
  created_at: number;
}

interface SessionRow {
  session_no: number;
  created_at: number;
}

/** What was summed of one session so far: its hot events up to `throughId`, or its archive. */
interface Tally {
  /** The session row it was summed for: a session deleted and made again is another one. */
  sessionNo: number;
  sessionCreatedAt: number;
  throughId: number;
  /** Hot events summed (all of them have ids up to `throughId`). */
  events: number;
  /** The archive's checksum when the sums are a cold session's. */
  archive: string | null;
  sums: Map<string, SessionModelUsage>;
}

// Every event counts in `events`, so every row is read; only a message's JSON is passed over.
const HOT_AFTER = `SELECT id, event_type, CASE WHEN event_type = 'message' THEN event_json ELSE ''
    END AS event_json, created_at
  FROM transcript_events WHERE session_no = ? AND id > ? ORDER BY id`;
const COUNT_THROUGH =
  "SELECT count(*) AS n FROM transcript_events WHERE session_no = ? AND id <= ?";
const SESSION = "SELECT session_no, created_at FROM sessions WHERE session_id = ?";

/** Sessions whose sums are kept per agent connection (a few hundred bytes each). */
const KEPT_SESSIONS = 128;

/**
 * A session's usage, summed from its events rather than kept in a per-session rollup: a session
 * is bounded, and a per-session rollup would add a row write to every append and bookkeeping to
 * every cold move, restore and delete. CPU time on a 10,000-event session of bench/usage.mjs's
 * events (half assistant messages with usage): 46 ms hot, each message parsed once and summed by
 * `usageFactsOf` (the rules of the daily rollups' view, which reads the JSON a dozen times an
 * event and took 80 ms), and 65–75 ms cold (the archive inflated too).
 *
 * The sums are kept for the sessions asked about most recently, so that a session page refreshed
 * on every append adds only the events appended since (a count of the rows already summed checks
 * that none went away: a move to cold storage and back redraws them), and a cold session's are
 * kept while its archive is the same file.
 */
export class SessionUsageQuery {
  private readonly hotAfter: SqlStatement<EventRow>;
  private readonly countThrough: SqlStatement<{ n: number }>;
  private readonly session: SqlStatement<SessionRow>;
  private readonly kept = new Map<string, Tally>();

  constructor(
    db: Database,
    private readonly cold: () => ColdStore,
  ) {
    this.hotAfter = db.prepare(HOT_AFTER);
    this.countThrough = db.prepare(COUNT_THROUGH);
    this.session = db.prepare(SESSION);
  }

  /** Usage of `sessionId` by provider and model; no models for a session without events. */
  bySession(sessionId: string): SessionUsage {
    const row = this.session.get(sessionId);
    if (row === undefined) return { cold: false, models: [] };
    const tally = this.hotTally(sessionId, row);
    if (tally.events > 0) return this.answer(sessionId, tally, false);
    const cold = this.coldTally(sessionId, row, tally);
    if (cold === undefined) return this.answer(sessionId, tally, false);
    // Restored while this looked: its events are hot rows again.
    if (cold === "restored") return this.answer(sessionId, this.hotTally(sessionId, row), false);
    return this.answer(sessionId, cold, true);
  }

  private answer(sessionId: string, tally: Tally, cold: boolean): SessionUsage {
    this.kept.delete(sessionId);
    this.kept.set(sessionId, tally);
    if (this.kept.size > KEPT_SESSIONS) this.kept.delete(this.kept.keys().next().value as string);
    return { cold, models: [...tally.sums.values()].map((sum) => ({ ...sum })).sort(byName) };
  }

  /** The kept hot sums brought up to date, or summed afresh when they no longer apply. */
  private hotTally(sessionId: string, session: SessionRow): Tally {
    const kept = this.kept.get(sessionId);
    const valid =
      kept !== undefined &&
      kept.archive === null &&
      kept.sessionNo === session.session_no &&
      kept.sessionCreatedAt === session.created_at &&
      this.countThrough.get(session.session_no, kept.throughId)?.n === kept.events;
    const tally: Tally = valid
      ? kept
      : {
          sessionNo: session.session_no,
          sessionCreatedAt: session.created_at,
          throughId: 0,
          events: 0,
          archive: null,
          sums: new Map(),
        };
    for (const event of this.hotAfter.all(session.session_no, tally.throughId)) {
      addEvent(tally.sums, parse(event.event_type, event.event_json), event.created_at);
      tally.events++;
      tally.throughId = event.id;
    }
    return tally;
  }

  /** A cold session's sums (kept while its archive is the same), or undefined while it is hot. */
  private coldTally(
    sessionId: string,
    session: SessionRow,
    hot: Tally,
  ): Tally | "restored" | undefined {
    const info = this.cold().info(sessionId);
    if (info === undefined) return undefined;
    const kept = this.kept.get(sessionId);
    if (kept?.archive === info.sha256 && kept.sessionNo === session.session_no) return kept;
    const archive = this.cold().open(sessionId);
    if (archive === undefined || archive === "restored") return archive;
    try {
      const sums = new Map<string, SessionModelUsage>();
      for (const archived of archive.reader.eventsAfter(0)) {
        addEvent(sums, parse(archived.eventType, archived.eventJson), archived.createdAt);
      }
      return { ...hot, archive: archive.row.sha256, sums };
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
  addUsageFacts(sum, facts);
}

/** The SQL's order: provider, then model. */
function byName(a: SessionModelUsage, b: SessionModelUsage): number {
  const x = `${a.provider}\u0000${a.model}`;
  const y = `${b.provider}\u0000${b.model}`;
  return x < y ? -1 : x > y ? 1 : 0;
}
