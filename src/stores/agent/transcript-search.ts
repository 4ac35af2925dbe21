import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { searchTerms, toFtsQuery } from "../../transcript/fts-query.js";
import { storedEventText } from "../../transcript/indexed-text.js";
import {
  decodeFtsAverages,
  type IndexFigures,
  mayHold,
  requiredTokens,
  scoreDocuments,
} from "../../transcript/pending-match.js";
import { isRecord } from "../../transcript/record.js";
import { searchableText } from "../../transcript/search-text.js";
import { makeSnippet } from "../../transcript/snippet.js";
import { ColdStore } from "./cold-store.js";
import { withLimit } from "./statement-limits.js";
import { INDEX_PENDING_LIMIT, TranscriptIndex } from "./transcript-index.js";

export interface SearchOptions {
  /** Only this session. */
  sessionId?: string;
  /** At most this many hits (default 20, at most 500). */
  limit?: number;
}

export interface SearchHit {
  agentId: string;
  sessionId: string;
  seq: number;
  eventId: string;
  eventType: string;
  /** The message role for message events, else null. */
  role: string | null;
  timestamp: string | null;
  /** bm25 rank: lower is better. Comparable within one query. */
  score: number;
  snippet: string;
  highlights: Array<[number, number]>;
}

interface HitRow {
  session_id: string;
  seq: number;
  event_json: string;
  score: number;
}

/** A cold index hit's session, as the claims see it; `event_json` while the session is hot again. */
interface ClaimedHit {
  session_id: string;
  through_seq: number;
  event_json: string | null;
}

/** A hit of the cold index: its event's hot JSON when the session is hot again, else null. */
interface ColdHitRow {
  session_id: string;
  seq: number;
  event_json: string | null;
  score: number;
}

interface PendingRow {
  id: number;
  session_id: string;
  seq: number;
  event_json: string;
}

/** A waiting event as a writer reads it: the text it appended is held, its JSON read if it hits. */
type PendingKey = Omit<PendingRow, "event_json">;

/**
 * Full-text search over message text, tool results and summaries (FTS5, bm25 ranking). Any user
 * string is safe: it is reduced to quoted words before it reaches MATCH.
 *
 * Never stale: events are indexed behind a watermark, not in their append, so a search first
 * takes in what is pending, in the snapshot of its MATCH. The few dozen events a writer leaves
 * unindexed are matched in JS (pending-match.ts), scored by FTS5's bm25 with the index's own
 * figures (as if they were indexed), and merged with the indexed hits; a longer backlog is indexed
 * first, in the transaction of the MATCH (a read-only connection, which cannot write, matches the
 * whole backlog itself).
 *
 * Cold sessions are searched too, in their own index (ColdIndex, a file of its own): the best hits
 * of both indexes are merged by score. bm25 depends on the statistics of the index it ranks in, so a
 * hot and a cold score are not strictly comparable; both rank the same words in the same way,
 * which is close enough to interleave them, and which hits are found does not depend on it.
 */
export class TranscriptSearch {
  private readonly index: TranscriptIndex;
  private readonly all: (limit: number) => SqlStatement<HitRow>;
  private readonly inSession: (limit: number) => SqlStatement<HitRow>;
  private readonly pendingAll: SqlStatement<PendingRow>;
  private readonly pendingInSession: SqlStatement<PendingRow>;
  private readonly pendingKeys: SqlStatement<PendingKey>;
  private readonly pendingKeysInSession: SqlStatement<PendingKey>;
  private readonly eventJson: SqlStatement<{ event_json: string }>;
  private readonly averages: SqlStatement<{ block: Uint8Array }>;
  private readonly countMatching: SqlStatement<{ n: number }>;
  private readonly coldAny: SqlStatement<{ any: number }>;
  private readonly claimedHit: SqlStatement<ClaimedHit>;
  private readonly sessionNoOf: SqlStatement<{ session_no: number }>;

  constructor(
    private readonly db: Database,
    readonly agentId: string,
    /** The index the connection's appends feed (one per connection: it keeps their events). */
    index: TranscriptIndex = new TranscriptIndex(db),
    private readonly cold: ColdStore = new ColdStore(db, agentId, index),
  ) {
    this.index = index;
    // The best `limit` index rows first, by bm25; only those are joined to their events (joining
    // first read the JSON of every matching event before the sort). Rows a move left behind have
    // no event (agent/0015_cold_unindex_later.sql): kept out of the limit. Sorted by SQLite on
    // bm25(), not by FTS5's `ORDER BY rank`: asked for its `rank` column, FTS5's sorted scan seeks
    // every returned row's postings again (measured at 200,000 events: a typical query 450 µs
    // with the scores that way, 300 µs this way).
    this.all = withLimit(
      db,
      (limit) =>
        `SELECT s.session_id, e.seq, e.event_json, f.score FROM
         (SELECT rowid, bm25(transcript_fts) AS score FROM transcript_fts
          WHERE transcript_fts MATCH ? AND rowid NOT IN (SELECT id FROM transcript_fts_stale)
          ORDER BY score LIMIT ${limit}) f
       JOIN transcript_events e ON e.id = f.rowid
       JOIN sessions s ON s.session_no = e.session_no
       ORDER BY f.score`,
    );
    this.inSession = withLimit(
      db,
      (limit) =>
        `SELECT s.session_id, e.seq, e.event_json, bm25(transcript_fts) AS score
       FROM transcript_fts
       JOIN transcript_events e ON e.id = transcript_fts.rowid
       JOIN sessions s ON s.session_no = e.session_no
       WHERE transcript_fts MATCH ? AND s.session_id = ? ORDER BY score LIMIT ${limit}`,
    );
    const pending = (columns: string) => `SELECT ${columns}
      FROM transcript_events e JOIN sessions s ON s.session_no = e.session_no
      WHERE e.id > ?`;
    const withJson = pending("e.id, s.session_id, e.seq, e.event_json");
    this.pendingAll = db.prepareOnUse(withJson);
    this.pendingInSession = db.prepareOnUse(`${withJson} AND s.session_id = ?`);
    const keys = pending("e.id, s.session_id, e.seq");
    this.pendingKeys = db.prepareOnUse(keys);
    this.pendingKeysInSession = db.prepareOnUse(`${keys} AND s.session_id = ?`);
    this.eventJson = db.prepareOnUse("SELECT event_json FROM transcript_events WHERE id = ?");
    this.averages = db.prepareOnUse("SELECT block FROM transcript_fts_data WHERE id = 1");
    this.countMatching = db.prepareOnUse(
      "SELECT count(*) AS n FROM transcript_fts WHERE transcript_fts MATCH ?",
    );
    // A MATCH on an empty FTS5 table still sets up its query (about 40 µs at 200,000 events),
    // and opening the cold index costs more: an agent that never moved a session cold has no claim.
    this.coldAny = db.prepareOnUse("SELECT EXISTS (SELECT 1 FROM cold_index_claims) AS any");
    this.claimedHit = db.prepareOnUse(
      `SELECT s.session_id, k.through_seq, e.event_json
       FROM sessions s JOIN cold_index_claims k ON k.session_no = s.session_no
       LEFT JOIN transcript_events e ON e.session_no = s.session_no AND e.seq = ?
       WHERE s.session_no = ?`,
    );
    this.sessionNoOf = db.prepareOnUse("SELECT session_no FROM sessions WHERE session_id = ?");
  }

  search(query: string, options: SearchOptions = {}): SearchHit[] {
    if (typeof query !== "string") throw new TypeError("Expected a search query string");
    const { sessionId, limit = 20 } = options;
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      throw new StateError("E_INVALID_ARGUMENT", `search limit must be 1 to 500, got ${limit}`);
    }
    const match = toFtsQuery(query);
    if (match === null) return [];
    // A few events above the watermark are matched here, in JS, against their held or parsed
    // text: indexing them first (one FTS5 segment written and committed) cost more than the
    // search itself. A longer backlog (another writer's, or an upgrade's) is indexed first.
    const read = () => this.matchIndexed(match, sessionId, limit);
    const waiting = this.db.readonly ? undefined : this.index.unindexed();
    // In one snapshot even with nothing waiting: the cold index's rows count only as far as this
    // snapshot's claims say (see matchCold).
    const rows =
      waiting === 0
        ? this.db.snapshot(read)
        : waiting === undefined || waiting < INDEX_PENDING_LIMIT
          ? this.db.snapshot(() => this.withPending(read(), match, sessionId, limit))
          : this.db.tx(() => {
              this.index.indexPending();
              return read();
            });
    const terms = searchTerms(query);
    return rows.map((row) => this.toHit(row, terms));
  }

  private matchIndexed(match: string, sessionId: string | undefined, limit: number): HitRow[] {
    const hot =
      sessionId === undefined
        ? this.all(limit).all(match)
        : this.inSession(limit).all(match, sessionId);
    const cold = this.matchCold(match, sessionId, limit);
    if (cold.length === 0) return hot;
    return [...hot, ...cold].sort((a, b) => a.score - b.score).slice(0, limit);
  }

  /**
   * The best hits of the cold index that the agent database's claims cover, read after this
   * snapshot began: a move commits its rows there before it claims them here, so an event is
   * either hot in this snapshot or claimed, and found once. Events of sessions that are hot again
   * come with their rows; the others are read from their session's archive, each opened once.
   */
  private matchCold(match: string, sessionId: string | undefined, limit: number): HitRow[] {
    if (this.coldAny.get()?.any !== 1) return [];
    const sessionNo =
      sessionId === undefined ? undefined : this.sessionNoOf.get(sessionId)?.session_no;
    if (sessionId !== undefined && sessionNo === undefined) return [];
    let rows: ColdHitRow[] = [];
    // Unclaimed rows (a failed move's, a deleted session's until `gc`) are rare: a second, wider
    // read is needed only when they took places among the best.
    for (let want = limit; ; want *= 4) {
      const found = this.cold.index.match(match, want, sessionNo);
      rows = found.flatMap((hit) => {
        const claimed = this.claimedHit.get(hit.seq, hit.sessionNo);
        if (claimed === undefined || hit.seq > claimed.through_seq) return [];
        const { session_id, event_json } = claimed;
        return [{ session_id, seq: hit.seq, event_json, score: hit.score }];
      });
      if (rows.length >= limit || found.length < want) break;
    }
    const hits: HitRow[] = [];
    const archived = new Map<string, ColdHitRow[]>();
    for (const row of rows.slice(0, limit)) {
      if (row.event_json !== null) hits.push({ ...row, event_json: row.event_json });
      else archived.set(row.session_id, [...(archived.get(row.session_id) ?? []), row]);
    }
    for (const [id, sessionRows] of archived) hits.push(...this.fromArchive(id, sessionRows));
    return hits;
  }

  private fromArchive(sessionId: string, rows: readonly ColdHitRow[]): HitRow[] {
    const archive = this.cold.open(sessionId);
    // Restored by another connection since the MATCH: the next search reads the hot rows.
    if (archive === undefined || archive === "restored") return [];
    try {
      const json = archive.jsonBySeq(rows.map((row) => row.seq));
      return rows.flatMap((row) => {
        const eventJson = json.get(row.seq);
        return eventJson === undefined ? [] : [{ ...row, event_json: eventJson }];
      });
    } finally {
      archive.close();
    }
  }

  /** The indexed hits merged with matches among the events above the watermark. */
  private withPending(
    indexed: HitRow[],
    match: string,
    sessionId: string | undefined,
    limit: number,
  ): HitRow[] {
    const found = this.db.readonly
      ? this.matchRead(match, sessionId)
      : (this.matchHeld(match, sessionId) ?? this.matchRead(match, sessionId));
    if (found.length === 0) return indexed;
    return [...indexed, ...found].sort((a, b) => a.score - b.score).slice(0, limit);
  }

  /**
   * A writer's waiting events are the ones it appended, their indexed text held: only their keys
   * are read, and the JSON of those that match. Undefined when one of them is another writer's.
   */
  private matchHeld(match: string, sessionId: string | undefined): HitRow[] | undefined {
    const mark = this.index.mark();
    const keys =
      sessionId === undefined
        ? this.pendingKeys.all(mark)
        : this.pendingKeysInSession.all(mark, sessionId);
    const held = this.index.heldTexts(keys.map((key) => key.id));
    if (held === undefined) return undefined;
    const hits = this.scoreWaiting(held, match);
    return hits.flatMap(({ at, score }) => {
      const key = keys[at] as PendingKey;
      // Read in the snapshot the keys came from: the row is there.
      const json = this.eventJson.get(key.id)?.event_json;
      return json === undefined
        ? []
        : [{ session_id: key.session_id, seq: key.seq, event_json: json, score }];
    });
  }

  /** Waiting events read with their JSON (a read-only connection holds no text). */
  private matchRead(match: string, sessionId: string | undefined): HitRow[] {
    const mark = this.index.mark();
    const rows =
      sessionId === undefined
        ? this.pendingAll.all(mark)
        : this.pendingInSession.all(mark, sessionId);
    // Most searches match none of the waiting events: ruled out on their row's raw JSON, then
    // the few rows that may match on their text. Only once one does are all of them parsed: the
    // scores count every waiting text.
    const tokens = requiredTokens(match);
    const parsed: string[] = [];
    const text = (at: number) => {
      parsed[at] ??= storedEventText((rows[at] as PendingRow).event_json);
      return parsed[at];
    };
    const candidates = rows.flatMap((row, at) =>
      mayHold(row.event_json, tokens) ? [text(at)] : [],
    );
    if (!scoreDocuments(candidates, match).some((score) => score !== null)) return [];
    const texts = rows.map((_, at) => text(at));
    return this.scoreWaiting(texts, match).map(({ at, score }) => {
      const row = rows[at] as PendingRow;
      return { session_id: row.session_id, seq: row.seq, event_json: row.event_json, score };
    });
  }

  /**
   * The waiting texts that match, with the score FTS5 would give them once indexed. The scores
   * need every waiting text (the batch's lengths); `scoreDocuments` rules each one out on its
   * characters first and reads the index's figures only once one matches.
   */
  private scoreWaiting(texts: readonly string[], match: string): { at: number; score: number }[] {
    const scores = scoreDocuments(texts, match, this.indexFigures());
    return scores.flatMap((score, at) =>
      score === null || score === undefined ? [] : [{ at, score }],
    );
  }

  /** The index's own bm25 figures (transcript_fts has one column, `text`). */
  private indexFigures(): IndexFigures {
    return {
      totals: () => {
        const block = this.averages.get()?.block;
        if (block === undefined) return { rows: 0, tokens: 0 };
        const { rows, tokens } = decodeFtsAverages(block);
        return { rows, tokens: tokens[0] ?? 0 };
      },
      rowsMatching: (phrase) => this.countMatching.get(phrase)?.n ?? 0,
    };
  }

  private toHit(row: HitRow, terms: readonly string[]): SearchHit {
    const event = JSON.parse(row.event_json) as TranscriptEvent;
    const snippet = makeSnippet(searchableText(event), terms);
    const message = event.message;
    return {
      agentId: this.agentId,
      sessionId: row.session_id,
      seq: row.seq,
      eventId: event.id,
      eventType: event.type,
      role: isRecord(message) && typeof message.role === "string" ? message.role : null,
      timestamp: typeof event.timestamp === "string" ? event.timestamp : null,
      score: row.score,
      snippet: snippet.text,
      highlights: snippet.highlights,
    };
  }
}
