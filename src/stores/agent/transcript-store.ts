import { randomBytes } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { BLOB_REF_PREFIX, encodeForStorage, restoreInlineBlobs } from "../../transcript/blobs.js";
import { parentIdOf, type TranscriptEvent } from "../../transcript/event.js";
import { encodeEvent } from "../../transcript/jsonl-codec.js";
import { isRecord } from "../../transcript/record.js";
import { searchableText } from "../../transcript/search-text.js";
import { checkEventId, checkSessionId } from "./ids.js";
import type { EventRow, IdentityRow, SessionRow } from "./transcript-rows.js";

/** Inline base64 payloads at least this long move to `transcript_blobs` at append time. */
export const INLINE_BLOB_THRESHOLD = 16 * 1024;
export const TRANSCRIPT_HEADER_VERSION = 3;

/** An event to append: the legacy record shape, with `id`, `parentId`, `timestamp` optional. */
export interface NewTranscriptEvent {
  type: string;
  id?: string;
  parentId?: string | null;
  timestamp?: string;
  [key: string]: unknown;
}

export interface AppendOptions {
  /** A repeat with the same key returns the first event instead of appending a duplicate. */
  idempotencyKey?: string;
  /** Routing key recorded on the session when this append creates it. */
  sessionKey?: string;
  /** Working directory recorded in the header when this append writes it. */
  cwd?: string;
  /** Write a `session` header first when the session has no events yet (default true). */
  ensureHeader?: boolean;
  /**
   * Store the event exactly as given (imports): `id` required, a missing `parentId` stays
   * missing, no timestamp is invented, and a parent outside the session is allowed.
   */
  verbatim?: boolean;
}

export interface StoredEvent {
  sessionId: string;
  seq: number;
  event: TranscriptEvent;
  createdAt: number;
}

/** A stored event with the idempotency key it was appended under. */
export interface KeyedEvent extends StoredEvent {
  idempotencyKey: string;
}

export interface AppendResult extends StoredEvent {
  /** True when an idempotency key or event id matched an event already stored. */
  deduplicated: boolean;
}

/** One append transaction's view of its session; see TranscriptStore.startBatch. */
interface AppendBatch {
  readonly sessionId: string;
  session: SessionRow | undefined;
  tailDirty: boolean;
  /** Stored events by id for the ids a batch names, or null to look each one up. */
  known: Map<string, StoredEvent> | null;
}

export interface SessionScope {
  agentId: string;
  sessionId: string;
  updatedAt: number;
  eventCount: number;
}

export interface ReadOptions {
  /** Only events after this seq (keyset pagination). Default 0. */
  afterSeq?: number;
  /** At most this many events (default 1000, at most 10000). */
  limit?: number;
}

const APPEND_OPTION_KEYS = new Set([
  "idempotencyKey",
  "sessionKey",
  "cwd",
  "ensureHeader",
  "verbatim",
]);
const MAX_READ = 10_000;

function idempotencyKeyOf(input: NewTranscriptEvent, options: AppendOptions): string | null {
  if (options.idempotencyKey !== undefined) return options.idempotencyKey;
  const message = input.message;
  return isRecord(message) && typeof message.idempotencyKey === "string"
    ? message.idempotencyKey
    : null;
}

function eventTime(event: TranscriptEvent, fallback: number): number {
  const parsed = typeof event.timestamp === "string" ? Date.parse(event.timestamp) : Number.NaN;
  return Number.isFinite(parsed) ? parsed : fallback;
}

function checkLimit(limit: number, max: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `limit must be an integer from 1 to ${max}, got ${limit}`,
    );
  }
  return limit;
}

/**
 * The event log of an agent's sessions. One append is one transaction: ensure the session and its
 * header, honour the idempotency key, take the parent from the current leaf, assign the next seq,
 * record the identity row and the search text. Events keep the legacy record shape, so a JSONL
 * export reproduces what was imported.
 */
export class TranscriptStore {
  private readonly selectSession: SqlStatement<SessionRow>;
  private readonly insertSession: SqlStatement;
  private readonly updateTail: SqlStatement;
  private readonly insertEvent: SqlStatement;
  private readonly insertIdentity: SqlStatement;
  private readonly insertText: SqlStatement;
  private readonly insertBlob: SqlStatement;
  private readonly insertBlobRef: SqlStatement;
  private readonly selectBlob: SqlStatement<{ data: Uint8Array }>;
  private readonly deleteOrphanBlobs: SqlStatement;
  private readonly selectScopes: SqlStatement<
    Pick<SessionRow, "session_id" | "updated_at" | "last_seq">
  >;
  private readonly selectByKey: SqlStatement<EventRow>;
  private readonly selectById: SqlStatement<EventRow>;
  private readonly selectByIds: SqlStatement<EventRow & { event_id: string }>;
  private readonly selectIdentity: SqlStatement<Pick<IdentityRow, "seq">>;
  private readonly selectRange: SqlStatement<EventRow>;
  private readonly selectKeyedRange: SqlStatement<EventRow & { idempotency_key: string }>;
  private readonly selectTail: SqlStatement<EventRow>;
  private readonly selectAll: SqlStatement<EventRow>;

  constructor(
    private readonly db: Database,
    readonly agentId: string,
  ) {
    this.selectSession = db.prepare("SELECT * FROM sessions WHERE session_id = ?");
    this.insertSession = db.prepare(
      "INSERT INTO sessions (session_id, session_key, created_at, updated_at) VALUES (?, ?, ?, ?)",
    );
    this.updateTail = db.prepare(
      "UPDATE sessions SET last_seq = ?, leaf_event_id = ?, updated_at = max(updated_at, ?) WHERE session_id = ?",
    );
    this.insertEvent = db.prepare(
      "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
    );
    this.insertIdentity = db.prepare(
      `INSERT INTO transcript_event_identities
         (session_id, event_id, seq, event_type, has_parent, parent_id, message_idempotency_key, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.insertText = db.prepare("INSERT INTO transcript_fts (rowid, text) VALUES (?, ?)");
    this.insertBlob = db.prepare(
      `INSERT INTO transcript_blobs (sha256, mime_type, size_bytes, data, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (sha256) DO NOTHING`,
    );
    this.insertBlobRef = db.prepare(
      "INSERT OR IGNORE INTO transcript_blob_refs (session_id, seq, sha256) VALUES (?, ?, ?)",
    );
    this.selectBlob = db.prepare("SELECT data FROM transcript_blobs WHERE sha256 = ?");
    this.selectScopes = db.prepare(
      "SELECT session_id, updated_at, last_seq FROM sessions ORDER BY updated_at DESC, session_id LIMIT ?",
    );
    this.deleteOrphanBlobs = db.prepare(
      `DELETE FROM transcript_blobs WHERE NOT EXISTS
         (SELECT 1 FROM transcript_blob_refs r WHERE r.sha256 = transcript_blobs.sha256)`,
    );
    const byIdentity = `SELECT e.* FROM transcript_event_identities i
       JOIN transcript_events e ON e.session_id = i.session_id AND e.seq = i.seq
       WHERE i.session_id = ?`;
    this.selectByKey = db.prepare(`${byIdentity} AND i.message_idempotency_key = ?`);
    this.selectById = db.prepare(`${byIdentity} AND i.event_id = ?`);
    this.selectByIds = db.prepare(
      `SELECT e.*, i.event_id FROM transcript_event_identities i
       JOIN transcript_events e ON e.session_id = i.session_id AND e.seq = i.seq
       WHERE i.session_id = ? AND i.event_id IN (SELECT value FROM json_each(?))`,
    );
    this.selectIdentity = db.prepare(
      "SELECT seq FROM transcript_event_identities WHERE session_id = ? AND event_id = ?",
    );
    this.selectRange = db.prepare(
      "SELECT * FROM transcript_events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    );
    // A seq range first: the events after a known tail are few, whatever the session's size.
    this.selectKeyedRange = db.prepare(
      `SELECT e.*, i.message_idempotency_key AS idempotency_key FROM transcript_event_identities i
       JOIN transcript_events e ON e.session_id = i.session_id AND e.seq = i.seq
       WHERE i.session_id = ? AND i.seq > ? AND substr(i.message_idempotency_key, 1, length(?)) = ?
       ORDER BY i.seq`,
    );
    this.selectTail = db.prepare(
      "SELECT * FROM transcript_events WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
    );
    this.selectAll = db.prepare(
      "SELECT * FROM transcript_events WHERE session_id = ? AND seq <= ? ORDER BY seq",
    );
  }

  /** Appends one event in one transaction; see the class comment. */
  append(sessionId: string, input: NewTranscriptEvent, options: AppendOptions = {}): AppendResult {
    this.checkAppendOptions(options);
    checkSessionId(sessionId);
    return this.db.tx(() => {
      const batch = this.startBatch(sessionId, null);
      const result = this.appendInTx(batch, input, options);
      this.flushTail(batch);
      return result;
    });
  }

  /** Appends several events in order, all in one transaction. */
  appendMany(
    sessionId: string,
    inputs: readonly NewTranscriptEvent[],
    options: Omit<AppendOptions, "idempotencyKey"> = {},
  ): AppendResult[] {
    this.checkAppendOptions(options);
    checkSessionId(sessionId);
    return this.db.tx(() => {
      const batch = this.startBatch(sessionId, inputs);
      const results = inputs.map((input) => this.appendInTx(batch, input, options));
      this.flushTail(batch);
      return results;
    });
  }

  /** Events after `afterSeq`, in seq order. */
  read(sessionId: string, options: ReadOptions = {}): StoredEvent[] {
    const { afterSeq = 0, limit = 1000 } = options;
    return this.selectRange
      .all(checkSessionId(sessionId), afterSeq, checkLimit(limit, MAX_READ))
      .map((row) => this.decode(row));
  }

  /**
   * Events after `afterSeq` appended under an idempotency key starting with `keyPrefix`, in seq
   * order: what one writer stored, told apart from other writers' events in the same session.
   */
  readKeyed(sessionId: string, keyPrefix: string, afterSeq = 0): KeyedEvent[] {
    return this.selectKeyedRange
      .all(checkSessionId(sessionId), afterSeq, keyPrefix, keyPrefix)
      .map((row) => ({ ...this.decode(row), idempotencyKey: row.idempotency_key }));
  }

  /** The last `n` events, in seq order. */
  tail(sessionId: string, n = 50): StoredEvent[] {
    return this.selectTail
      .all(checkSessionId(sessionId), checkLimit(n, MAX_READ))
      .reverse()
      .map((row) => this.decode(row));
  }

  /** Every event of a session (up to `untilSeq`), streamed in seq order. */
  *events(sessionId: string, untilSeq = Number.MAX_SAFE_INTEGER): IterableIterator<StoredEvent> {
    for (const row of this.selectAll.iterate(checkSessionId(sessionId), untilSeq)) {
      yield this.decode(row);
    }
  }

  /** One event by its id, or undefined. */
  get(sessionId: string, eventId: string): StoredEvent | undefined {
    const row = this.selectById.get(checkSessionId(sessionId), eventId);
    return row ? this.decode(row) : undefined;
  }

  /** Sessions that have a log, most recently updated first. */
  listScopes(limit = 1000): SessionScope[] {
    return this.selectScopes.all(checkLimit(limit, 100_000)).map((row) => ({
      agentId: this.agentId,
      sessionId: row.session_id,
      updatedAt: row.updated_at,
      eventCount: row.last_seq,
    }));
  }

  /** Deletes blobs no event refers to any more (after sessions were deleted). */
  sweepOrphanBlobs(): number {
    return this.deleteOrphanBlobs.run().changes;
  }

  /** The session as JSONL in the legacy format, one line per event. */
  *exportJsonl(sessionId: string): IterableIterator<string> {
    for (const stored of this.events(sessionId)) yield `${encodeEvent(stored.event)}\n`;
  }

  /**
   * The state of one append transaction: the session row as it will be once the tail is written
   * (once, at the end, instead of once per event), and for a batch the events already stored
   * under the batch's ids, fetched in one query instead of one lookup per event.
   */
  private startBatch(sessionId: string, inputs: readonly NewTranscriptEvent[] | null): AppendBatch {
    const batch: AppendBatch = {
      sessionId,
      session: this.selectSession.get(sessionId),
      tailDirty: false,
      known: null,
    };
    if (inputs !== null && inputs.length > 1) {
      const ids = inputs.flatMap((input) => (typeof input?.id === "string" ? [input.id] : []));
      batch.known = new Map();
      if (ids.length > 0 && batch.session !== undefined && batch.session.last_seq > 0) {
        for (const row of this.selectByIds.all(sessionId, JSON.stringify(ids))) {
          batch.known.set(row.event_id, this.decode(row));
        }
      }
    }
    return batch;
  }

  /** The event stored under `eventId` in the batch's session, if any. */
  private storedById(batch: AppendBatch, eventId: string): StoredEvent | undefined {
    return batch.known !== null ? batch.known.get(eventId) : this.get(batch.sessionId, eventId);
  }

  private flushTail(batch: AppendBatch): void {
    const session = batch.session;
    if (!batch.tailDirty || session === undefined) return;
    this.updateTail.run(
      session.last_seq,
      session.leaf_event_id,
      session.updated_at,
      session.session_id,
    );
    batch.tailDirty = false;
  }

  private appendInTx(
    batch: AppendBatch,
    input: NewTranscriptEvent,
    options: AppendOptions,
  ): AppendResult {
    const { sessionId } = batch;
    if (!isRecord(input) || typeof input.type !== "string" || input.type === "") {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `event for session ${sessionId} needs a string "type"`,
      );
    }
    const now = Date.now();
    // A session first seen through an imported (verbatim) event began when that event did.
    batch.session ??= this.createSession(
      sessionId,
      options,
      options.verbatim ? eventTime(input as TranscriptEvent, now) : now,
    );
    const key = idempotencyKeyOf(input, options);
    if (key !== null) {
      const existing = this.selectByKey.get(sessionId, key);
      if (existing) return { ...this.decode(existing), deduplicated: true };
    }
    if (
      batch.session.last_seq === 0 &&
      input.type !== "session" &&
      options.ensureHeader !== false
    ) {
      this.store(batch, this.header(sessionId, options, now), null, now);
    }
    const event = this.materialize(batch.session, input, options, now);
    const duplicate = this.storedById(batch, event.id);
    if (duplicate) return this.sameOrConflict(duplicate, event);
    if (event.type === "session" && batch.session.last_seq > 0) {
      throw new StateError("E_CONFLICT", `session ${sessionId} already has a header`, {
        details: { sessionId },
      });
    }
    return { ...this.store(batch, event, key, now), deduplicated: false };
  }

  private createSession(sessionId: string, options: AppendOptions, at: number): SessionRow {
    this.insertSession.run(sessionId, options.sessionKey ?? null, at, at);
    return this.selectSession.get(sessionId) as SessionRow;
  }

  private header(sessionId: string, options: AppendOptions, now: number): TranscriptEvent {
    const header: TranscriptEvent = {
      type: "session",
      version: TRANSCRIPT_HEADER_VERSION,
      id: sessionId,
      timestamp: new Date(now).toISOString(),
    };
    if (options.cwd !== undefined) header.cwd = options.cwd;
    return header;
  }

  /** The event as it will be stored: legacy key order, with id, parent and time filled in. */
  private materialize(
    session: SessionRow,
    input: NewTranscriptEvent,
    options: AppendOptions,
    now: number,
  ): TranscriptEvent {
    if (options.verbatim) {
      checkEventId(input.id, session.session_id);
      return { ...input } as TranscriptEvent;
    }
    const { type, id, parentId, timestamp, ...rest } = input;
    const event: TranscriptEvent = {
      type,
      id:
        id === undefined
          ? this.newEventId(session.session_id)
          : checkEventId(id, session.session_id),
      ...(type === "session"
        ? {}
        : {
            parentId: parentId === undefined ? session.leaf_event_id : parentId,
          }),
      timestamp: timestamp ?? new Date(now).toISOString(),
      ...rest,
    };
    const parent = parentIdOf(event);
    if (parent !== null && this.selectIdentity.get(session.session_id, parent) === undefined) {
      throw new StateError(
        "E_NOT_FOUND",
        `parent event ${parent} is not in session ${session.session_id}`,
        { details: { sessionId: session.session_id, parentId: parent } },
      );
    }
    return event;
  }

  private newEventId(sessionId: string): string {
    for (;;) {
      const id = randomBytes(4).toString("hex");
      if (this.selectIdentity.get(sessionId, id) === undefined) return id;
    }
  }

  /**
   * Writes the event, its identity, blobs and search text, and moves the batch's session tail
   * (written by flushTail before the transaction commits).
   */
  private store(
    batch: AppendBatch,
    original: TranscriptEvent,
    idempotencyKey: string | null,
    now: number,
  ): StoredEvent {
    const session = batch.session as SessionRow;
    const sessionId = session.session_id;
    const seq = session.last_seq + 1;
    const createdAt = eventTime(original, now);
    const { json, blobs } = encodeForStorage(original, INLINE_BLOB_THRESHOLD);
    const rowid = this.insertEvent.run(sessionId, seq, json, createdAt).lastInsertRowid;
    const parent = parentIdOf(original);
    this.insertIdentity.run(
      sessionId,
      original.id,
      seq,
      original.type,
      parent === null ? 0 : 1,
      parent,
      idempotencyKey,
      createdAt,
    );
    for (const blob of blobs) {
      this.insertBlob.run(blob.sha256, blob.mimeType, blob.data.length, blob.data, now);
      this.insertBlobRef.run(sessionId, seq, blob.sha256);
    }
    const text = searchableText(original);
    if (text !== "") this.insertText.run(rowid, text);
    session.last_seq = seq;
    if (original.type !== "session") session.leaf_event_id = original.id;
    session.updated_at = Math.max(session.updated_at, createdAt);
    batch.tailDirty = true;
    const stored = { sessionId, seq, event: original, createdAt };
    batch.known?.set(original.id, stored);
    return stored;
  }

  private sameOrConflict(stored: StoredEvent, event: TranscriptEvent): AppendResult {
    if (encodeEvent(stored.event) === encodeEvent(event)) return { ...stored, deduplicated: true };
    throw new StateError(
      "E_CONFLICT",
      `session ${stored.sessionId} already has a different event with id ${event.id}`,
      { details: { sessionId: stored.sessionId, eventId: event.id, seq: stored.seq } },
    );
  }

  private decode(row: EventRow): StoredEvent {
    let event = JSON.parse(row.event_json) as TranscriptEvent;
    if (row.event_json.includes(BLOB_REF_PREFIX)) {
      event = restoreInlineBlobs(event, (sha) => {
        const blob = this.selectBlob.get(sha);
        return blob ? Buffer.from(blob.data) : undefined;
      });
    }
    return { sessionId: row.session_id, seq: row.seq, event, createdAt: row.created_at };
  }

  private checkAppendOptions(options: object): void {
    for (const key of Object.keys(options)) {
      if (!APPEND_OPTION_KEYS.has(key)) throw new TypeError(`Unknown append option: ${key}`);
    }
  }
}
