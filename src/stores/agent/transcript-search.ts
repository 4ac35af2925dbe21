import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { searchTerms, toFtsQuery } from "../../transcript/fts-query.js";
import { isRecord } from "../../transcript/record.js";
import { searchableText } from "../../transcript/search-text.js";
import { makeSnippet } from "../../transcript/snippet.js";
import type { EventRow } from "./transcript-rows.js";

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

type HitRow = EventRow & { score: number };

/**
 * Full-text search over message text, tool results and summaries (FTS5, bm25 ranking). Any user
 * string is safe: it is reduced to quoted words before it reaches MATCH.
 */
export class TranscriptSearch {
  private readonly all: SqlStatement<HitRow>;
  private readonly inSession: SqlStatement<HitRow>;

  constructor(
    db: Database,
    readonly agentId: string,
  ) {
    const base = `SELECT e.*, bm25(transcript_fts) AS score FROM transcript_fts
      JOIN transcript_events e ON e.id = transcript_fts.rowid
      WHERE transcript_fts MATCH ?`;
    this.all = db.prepare(`${base} ORDER BY score LIMIT ?`);
    this.inSession = db.prepare(`${base} AND e.session_id = ? ORDER BY score LIMIT ?`);
  }

  search(query: string, options: SearchOptions = {}): SearchHit[] {
    if (typeof query !== "string") throw new TypeError("Expected a search query string");
    const { sessionId, limit = 20 } = options;
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      throw new StateError("E_INVALID_ARGUMENT", `search limit must be 1 to 500, got ${limit}`);
    }
    const match = toFtsQuery(query);
    if (match === null) return [];
    const rows =
      sessionId === undefined
        ? this.all.all(match, limit)
        : this.inSession.all(match, sessionId, limit);
    const terms = searchTerms(query);
    return rows.map((row) => this.toHit(row, terms));
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
