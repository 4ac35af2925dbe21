import { randomBytes } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { isStateError, StateError } from "../../db/errors.js";
import { rejectUnknownOptions } from "../../db/options.js";
import { checkEventId, checkSessionId } from "../../ids.js";
import { BLOB_REF_PREFIX, encodeForStorage, restoreInlineBlobs } from "../../transcript/blobs.js";
import { parentIdOf, type TranscriptEvent } from "../../transcript/event.js";
import { encodeEvent } from "../../transcript/jsonl-codec.js";
import { isRecord } from "../../transcript/record.js";
import type { ColdArchive } from "./cold-reader.js";
import { ColdStore } from "./cold-store.js";
import { TranscriptIndex } from "./transcript-index.js";
import { type EventRow, SESSION_WITH_TAIL, type SessionTailRow } from "./transcript-rows.js";

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

/** Where a session's log ends, as one append transaction sees it. */
interface SessionTail {
  sessionNo: number;
  lastSeq: number;
  /** Where the next event attaches: the last event, unless `branch()` moved it. */
  leaf: string | null;
}

/** One append transaction's view of its session; see TranscriptStore.startBatch. */
interface AppendBatch {
  readonly sessionId: string;
  tail: SessionTail | undefined;
  /** Stored events by id for the ids a batch names, or null to look each one up. */
  known: Map<string, StoredEvent> | null;
  /** The ids of the first and the last row written, for the search index (0 before any). */
  firstId: number;
  lastId: number;
}

/** A session row's number and leaf override, with its last event (nulls when it has none). */
interface SessionHead {
  session_no: number;
  leaf_override_id: string | null;
  leaf_override_seq: number | null;
  seq: number | null;
  event_id: string | null;
  event_type: string | null;
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
/** Events per read of `events()`: large enough that the per-read cost vanishes (~1 ms a page). */
const EVENTS_PAGE = 500;

function idempotencyKeyOf(input: NewTranscriptEvent, options: AppendOptions): string | null {
  if (options.idempotencyKey !== undefined) return options.idempotencyKey;
  const message = input.message;
  return isRecord(message) && typeof message.idempotencyKey === "string"
    ? message.idempotencyKey
    : null;
}

/** Random bytes drawn 4 KiB at a time: one `randomBytes` call per event id was a hot spot. */
const idPool = { bytes: Buffer.alloc(0), next: 0 };

/**
 * Sessions whose last generated id a store remembers (see nextEventId): past this many it
 * forgets them all, and their next ids start at random again.
 */
const FOLLOWED_SESSIONS = 4096;

/**
 * The id of a new event: 8 hex characters, as the legacy writers make them. The one after
 * `previous` (the session's last event, when this store generated its id), else a random one.
 * An id goes into its session's `(session, event id)` index, and a random one lands in a random
 * leaf of it: in a long session a batch of 100 dirtied about 90 index pages, each written whole
 * to the WAL. Ids that follow each other fill one leaf. They are unique as random ones are (a
 * taken one is drawn again at random, see insertGenerated), and an id a caller chose is never
 * followed: a caller numbering its own ids 1, 2, 3 would otherwise find its next one taken.
 * Nothing relies on an event id being unguessable.
 */
function nextEventId(previous: string | undefined): string {
  if (previous === undefined) return newEventId();
  return ((Number.parseInt(previous, 16) + 1) >>> 0).toString(16).padStart(8, "0");
}

/** A new random event id. */
function newEventId(): string {
  if (idPool.next + 4 > idPool.bytes.length) {
    idPool.bytes = randomBytes(4096);
    idPool.next = 0;
  }
  idPool.next += 4;
  return idPool.bytes.toString("hex", idPool.next - 4, idPool.next);
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
 * write the event row. The search index follows in bulk (TranscriptIndex). Events keep the legacy record shape, so a JSONL
 * export reproduces what was imported.
 */
export class TranscriptStore {
  /** The search index behind this store's appends (see TranscriptIndex). */
  readonly index: TranscriptIndex;
  private coldStore: ColdStore | undefined;
  /**
   * The last id this store generated in each session, by session number, while that event is the
   * session's last as far as this store knows (checked against the session's head at each append).
   */
  private readonly generatedLast = new Map<number, string>();
  private readonly selectHead: SqlStatement<SessionHead>;
  private readonly insertSession: SqlStatement<{ session_no: number }>;
  private readonly insertEvent: SqlStatement;
  private readonly insertBlob: SqlStatement;
  private readonly insertBlobRef: SqlStatement;
  private readonly selectBlob: SqlStatement<{ data: Uint8Array }>;
  private readonly deleteOrphanBlobs: SqlStatement;
  private readonly selectScopes: SqlStatement<SessionTailRow>;
  private readonly selectIds: SqlStatement<{ session_id: string }>;
  private readonly selectByKey: SqlStatement<EventRow>;
  private readonly selectById: SqlStatement<EventRow>;
  private readonly selectByIds: SqlStatement<EventRow>;
  private readonly selectKnownId: SqlStatement<{ found: number }>;
  private readonly selectRange: SqlStatement<EventRow>;
  private readonly selectKeyedRange: SqlStatement<EventRow>;
  private readonly selectTail: SqlStatement<EventRow>;
  private readonly selectPage: SqlStatement<EventRow>;

  constructor(
    private readonly db: Database,
    readonly agentId: string,
  ) {
    this.index = new TranscriptIndex(db);
    this.selectHead = db.prepareOnUse(
      `SELECT s.session_no, s.leaf_override_id, s.leaf_override_seq, t.seq, t.event_id, t.event_type
       FROM sessions s LEFT JOIN transcript_events t ON t.session_no = s.session_no
         AND t.seq = (SELECT max(seq) FROM transcript_events WHERE session_no = s.session_no)
       WHERE s.session_id = ?`,
    );
    // The number is given here, not by the table's trigger, so the row is written once.
    this.insertSession = db.prepareOnUse(
      `INSERT INTO sessions (session_id, session_key, created_at, updated_at, session_no)
       VALUES (?, ?, ?, ?, (SELECT coalesce(max(session_no), 0) + 1 FROM sessions))
       RETURNING session_no`,
    );
    this.insertEvent = db.prepareOnUse(
      `INSERT INTO transcript_events
         (session_no, seq, event_id, event_type, parent_id, idempotency_key, created_at, event_json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.insertBlob = db.prepareOnUse(
      `INSERT INTO transcript_blobs (sha256, mime_type, size_bytes, data, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (sha256) DO NOTHING`,
    );
    this.insertBlobRef = db.prepareOnUse(
      "INSERT OR IGNORE INTO transcript_blob_refs (session_no, seq, sha256) VALUES (?, ?, ?)",
    );
    this.selectBlob = db.prepareOnUse("SELECT data FROM transcript_blobs WHERE sha256 = ?");
    this.selectScopes = db.prepareOnUse(
      `${SESSION_WITH_TAIL} ORDER BY active_at DESC, s.session_id LIMIT ?`,
    );
    this.selectIds = db.prepareOnUse("SELECT session_id FROM sessions");
    this.deleteOrphanBlobs = db.prepareOnUse(
      `DELETE FROM transcript_blobs WHERE NOT EXISTS
         (SELECT 1 FROM transcript_blob_refs r WHERE r.sha256 = transcript_blobs.sha256)`,
    );
    const inSession = "session_no = (SELECT session_no FROM sessions WHERE session_id = ?)";
    this.selectByKey = db.prepareOnUse(
      "SELECT * FROM transcript_events WHERE session_no = ? AND idempotency_key = ?",
    );
    this.selectById = db.prepareOnUse(
      `SELECT * FROM transcript_events WHERE ${inSession} AND event_id = ?`,
    );
    this.selectByIds = db.prepareOnUse(
      `SELECT * FROM transcript_events
       WHERE session_no = ? AND event_id IN (SELECT value FROM json_each(?))`,
    );
    // Answered from the (session_no, event_id) index alone, without reading the row.
    this.selectKnownId = db.prepareOnUse(
      "SELECT 1 AS found FROM transcript_events WHERE session_no = ? AND event_id = ?",
    );
    this.selectRange = db.prepareOnUse(
      `SELECT * FROM transcript_events WHERE ${inSession} AND seq > ? ORDER BY seq LIMIT ?`,
    );
    // A seq range first: the events after a known tail are few, whatever the session's size.
    this.selectKeyedRange = db.prepareOnUse(
      `SELECT * FROM transcript_events WHERE ${inSession} AND seq > ?
         AND substr(idempotency_key, 1, length(?)) = ? ORDER BY seq`,
    );
    this.selectTail = db.prepareOnUse(
      `SELECT * FROM transcript_events WHERE ${inSession} ORDER BY seq DESC LIMIT ?`,
    );
    this.selectPage = db.prepareOnUse(
      `SELECT * FROM transcript_events WHERE ${inSession} AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
    );
  }

  /**
   * Cold storage of this agent's idle sessions (see ColdStore). Reads of a cold session come from
   * its archive; an append to it restores it first.
   */
  get cold(): ColdStore {
    this.coldStore ??= new ColdStore(this.db, this.agentId, this.index);
    return this.coldStore;
  }

  /** Appends one event in one transaction; see the class comment. */
  append(sessionId: string, input: NewTranscriptEvent, options: AppendOptions = {}): AppendResult {
    this.checkAppendOptions(options);
    checkSessionId(sessionId);
    const result = this.db.tx(() => {
      const batch = this.startBatch(sessionId, null);
      const result = this.appendInTx(batch, input, options);
      if (batch.lastId > 0) this.index.afterAppend({ first: batch.firstId, last: batch.lastId });
      return result;
    });
    this.coldStore?.removeReleasedFiles();
    return result;
  }

  /** Appends several events in order, all in one transaction. */
  appendMany(
    sessionId: string,
    inputs: readonly NewTranscriptEvent[],
    options: Omit<AppendOptions, "idempotencyKey"> = {},
  ): AppendResult[] {
    this.checkAppendOptions(options);
    checkSessionId(sessionId);
    const results = this.db.tx(() => {
      const batch = this.startBatch(sessionId, inputs);
      const results = inputs.map((input) => this.appendInTx(batch, input, options));
      if (batch.lastId > 0) this.index.afterAppend({ first: batch.firstId, last: batch.lastId });
      return results;
    });
    this.coldStore?.removeReleasedFiles();
    return results;
  }

  /** Events after `afterSeq`, in seq order. */
  read(sessionId: string, options: ReadOptions = {}): StoredEvent[] {
    const { afterSeq = 0, limit = 1000 } = options;
    const rows = this.selectRange.all(
      checkSessionId(sessionId),
      afterSeq,
      checkLimit(limit, MAX_READ),
    );
    if (rows.length > 0) return rows.map((row) => this.decode(row, sessionId));
    return (
      this.fromCold(
        sessionId,
        (cold) => cold.read(afterSeq, limit),
        () => this.read(sessionId, options),
      ) ?? []
    );
  }

  /**
   * Events after `afterSeq` appended under an idempotency key starting with `keyPrefix`, in seq
   * order: what one writer stored, told apart from other writers' events in the same session.
   */
  readKeyed(sessionId: string, keyPrefix: string, afterSeq = 0): KeyedEvent[] {
    const rows = this.selectKeyedRange.all(
      checkSessionId(sessionId),
      afterSeq,
      keyPrefix,
      keyPrefix,
    );
    if (rows.length > 0) {
      return rows.map((row) => ({
        ...this.decode(row, sessionId),
        idempotencyKey: row.idempotency_key as string,
      }));
    }
    const keyed = (cold: ColdArchive) =>
      [...cold.reader.eventsAfter(afterSeq)]
        .filter((e) => e.idempotencyKey?.startsWith(keyPrefix))
        .map((e) => ({ ...cold.decode(e), idempotencyKey: e.idempotencyKey as string }));
    return (
      this.fromCold(sessionId, keyed, () => this.readKeyed(sessionId, keyPrefix, afterSeq)) ?? []
    );
  }

  /** The last `n` events, in seq order. */
  tail(sessionId: string, n = 50): StoredEvent[] {
    const rows = this.selectTail.all(checkSessionId(sessionId), checkLimit(n, MAX_READ));
    if (rows.length > 0) return rows.reverse().map((row) => this.decode(row, sessionId));
    const tail = (cold: ColdArchive) => cold.reader.tail(n).map((e) => cold.decode(e));
    return this.fromCold(sessionId, tail, () => this.tail(sessionId, n)) ?? [];
  }

  /**
   * Every event of a session (up to `untilSeq`), streamed in seq order. Read a page at a time,
   * each page its own short read: a statement stepped lazily would hold a read transaction open
   * for as long as the caller takes to consume it, and while any reader holds an old snapshot no
   * checkpoint can restart the WAL (docs/operations.md). The last seq is fixed when the iteration
   * starts, so events appended meanwhile are not included.
   */
  *events(sessionId: string, untilSeq = Number.MAX_SAFE_INTEGER): IterableIterator<StoredEvent> {
    checkSessionId(sessionId);
    const top = this.selectTail.get(sessionId, 1)?.seq;
    if (top === undefined) {
      yield* this.coldEvents(sessionId, untilSeq);
      return;
    }
    const last = Math.min(untilSeq, top);
    for (let after = 0; after < last; ) {
      const rows = this.selectPage.all(sessionId, after, last, EVENTS_PAGE);
      if (rows.length === 0) return;
      after = rows.at(-1)?.seq ?? last;
      for (const row of rows) yield this.decode(row, sessionId);
    }
  }

  /** One event by its id, or undefined. */
  get(sessionId: string, eventId: string): StoredEvent | undefined {
    const row = this.selectById.get(checkSessionId(sessionId), eventId);
    if (row) return this.decode(row, sessionId);
    return this.fromCold(
      sessionId,
      (cold) => cold.find(eventId),
      () => this.get(sessionId, eventId),
    );
  }

  /**
   * `read` from the archive when the session is cold; `again` when a restore took the archive
   * away meanwhile (the rows are hot again); undefined when the session is not cold.
   */
  private fromCold<T>(
    sessionId: string,
    read: (cold: ColdArchive) => T,
    again: () => T,
  ): T | undefined {
    const cold = this.cold.open(sessionId);
    if (cold === undefined) return undefined;
    if (cold === "restored") return again();
    try {
      return read(cold);
    } finally {
      cold.close();
    }
  }

  /** Every event of a cold session up to `untilSeq`; nothing when it is not cold. */
  private *coldEvents(sessionId: string, untilSeq: number): IterableIterator<StoredEvent> {
    const cold = this.cold.open(sessionId);
    if (cold === undefined) return;
    if (cold === "restored") {
      yield* this.events(sessionId, untilSeq);
      return;
    }
    try {
      for (const archived of cold.reader.eventsAfter(0)) {
        if (archived.seq > untilSeq) return;
        yield cold.decode(archived);
      }
    } finally {
      cold.close();
    }
  }

  /** Sessions that have a log, most recently updated first. */
  listScopes(limit = 1000): SessionScope[] {
    return this.selectScopes.all(checkLimit(limit, 100_000)).map((row) => ({
      agentId: this.agentId,
      sessionId: row.session_id,
      updatedAt: row.active_at,
      eventCount: row.last_seq,
    }));
  }

  /** The id of every session, in no particular order: no session's tail is read. */
  sessionIds(): string[] {
    return this.selectIds.all().map((row) => row.session_id);
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
   * The state of one append transaction: where the session's log ends (read once, then carried
   * forward event by event), and for a batch the events already stored under the batch's ids,
   * fetched in one query instead of one lookup per event.
   */
  private startBatch(sessionId: string, inputs: readonly NewTranscriptEvent[] | null): AppendBatch {
    let head = this.selectHead.get(sessionId);
    // A session with no event rows may be cold: its rows come back before anything is appended.
    if (head !== undefined && head.seq === null && this.cold.restoreInTx(sessionId)) {
      head = this.selectHead.get(sessionId);
    }
    const batch: AppendBatch = {
      sessionId,
      tail: head === undefined ? undefined : this.tailOf(head),
      known: null,
      firstId: 0,
      lastId: 0,
    };
    if (inputs !== null && inputs.length > 1) {
      const ids = inputs.flatMap((input) => (typeof input?.id === "string" ? [input.id] : []));
      batch.known = new Map();
      if (ids.length > 0 && batch.tail !== undefined && batch.tail.lastSeq > 0) {
        for (const row of this.selectByIds.all(batch.tail.sessionNo, JSON.stringify(ids))) {
          batch.known.set(row.event_id, this.decode(row, sessionId));
        }
      }
    }
    return batch;
  }

  private tailOf(head: SessionHead): SessionTail {
    const lastSeq = head.seq ?? 0;
    let leaf: string | null = null;
    if (head.leaf_override_seq === lastSeq) leaf = head.leaf_override_id;
    else if (head.event_type !== null && head.event_type !== "session") leaf = head.event_id;
    // Followed only while it is still the session's last event (see nextEventId).
    if (this.generatedLast.get(head.session_no) !== head.event_id) {
      this.generatedLast.delete(head.session_no);
    }
    return { sessionNo: head.session_no, lastSeq, leaf };
  }

  /** The event stored under `eventId` in the batch's session, if any. */
  private storedById(batch: AppendBatch, eventId: string): StoredEvent | undefined {
    if (batch.known !== null) return batch.known.get(eventId);
    // A new id is the common case: the key index answers it without reading the row.
    const sessionNo = (batch.tail as SessionTail).sessionNo;
    if (this.selectKnownId.get(sessionNo, eventId) === undefined) return undefined;
    return this.get(batch.sessionId, eventId);
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
    batch.tail ??= this.createSession(
      sessionId,
      options,
      options.verbatim ? eventTime(input as TranscriptEvent, now) : now,
    );
    const tail = batch.tail;
    const key = idempotencyKeyOf(input, options);
    if (key !== null) {
      const existing = this.selectByKey.get(tail.sessionNo, key);
      if (existing) return { ...this.decode(existing, sessionId), deduplicated: true };
    }
    if (tail.lastSeq === 0 && input.type !== "session" && options.ensureHeader !== false) {
      this.store(batch, this.header(sessionId, options, now), null, now);
    }
    const { event, generated } = this.materialize(batch, input, options, now);
    const duplicate = generated ? undefined : this.storedById(batch, event.id);
    if (duplicate) return this.sameOrConflict(duplicate, event);
    if (event.type === "session" && tail.lastSeq > 0) {
      throw new StateError("E_CONFLICT", `session ${sessionId} already has a header`, {
        details: { sessionId },
      });
    }
    return this.store(batch, event, key, now, generated);
  }

  private createSession(sessionId: string, options: AppendOptions, at: number): SessionTail {
    const row = this.insertSession.get(sessionId, options.sessionKey ?? null, at, at);
    this.generatedLast.delete(row?.session_no as number);
    return { sessionNo: row?.session_no as number, lastSeq: 0, leaf: null };
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

  /**
   * The event as it will be stored: legacy key order, with id, parent and time filled in.
   * `generated` says the id is new (so no stored event can have it, barring the collision `store`
   * handles) and the parent is the current leaf unless given (so it exists); neither needs a
   * lookup then.
   */
  private materialize(
    batch: AppendBatch,
    input: NewTranscriptEvent,
    options: AppendOptions,
    now: number,
  ): { event: TranscriptEvent; generated: boolean } {
    const { sessionId } = batch;
    const tail = batch.tail as SessionTail;
    if (options.verbatim) {
      checkEventId(input.id, sessionId);
      return { event: { ...input } as TranscriptEvent, generated: false };
    }
    const { type, id, parentId, timestamp, ...rest } = input;
    const event: TranscriptEvent = {
      type,
      id:
        id === undefined
          ? nextEventId(this.generatedLast.get(tail.sessionNo))
          : checkEventId(id, sessionId),
      ...(type === "session" ? {} : { parentId: parentId === undefined ? tail.leaf : parentId }),
      timestamp: timestamp ?? new Date(now).toISOString(),
      ...rest,
    };
    const parent = parentId === undefined ? null : parentIdOf(event);
    if (parent !== null && this.selectKnownId.get(tail.sessionNo, parent) === undefined) {
      throw new StateError("E_NOT_FOUND", `parent event ${parent} is not in session ${sessionId}`, {
        details: { sessionId, parentId: parent },
      });
    }
    return { event, generated: id === undefined };
  }

  /**
   * Writes the event and its blobs, and moves the batch's tail. Nothing else is written per
   * event: the session row keeps no tail, and the search index catches up in bulk.
   */
  private store(
    batch: AppendBatch,
    original: TranscriptEvent,
    idempotencyKey: string | null,
    now: number,
    generated = false,
  ): AppendResult {
    const tail = batch.tail as SessionTail;
    const seq = tail.lastSeq + 1;
    const createdAt = eventTime(original, now);
    let encoded = encodeForStorage(original, INLINE_BLOB_THRESHOLD);
    let encodedId = original.id;
    const attempt = () => {
      if (encodedId !== original.id) {
        encoded = encodeForStorage(original, INLINE_BLOB_THRESHOLD);
        encodedId = original.id;
      }
      return this.insertEvent.run(
        tail.sessionNo,
        seq,
        original.id,
        original.type,
        parentIdOf(original),
        idempotencyKey,
        createdAt,
        encoded.json,
      ).lastInsertRowid;
    };
    batch.lastId = Number(
      generated ? this.insertGenerated(tail.sessionNo, original, attempt) : attempt(),
    );
    if (batch.firstId === 0) batch.firstId = batch.lastId;
    this.index.noteAppended(batch.lastId, original, createdAt);
    for (const blob of encoded.blobs) {
      this.insertBlob.run(blob.sha256, blob.mimeType, blob.data.length, blob.data, now);
      this.insertBlobRef.run(tail.sessionNo, seq, blob.sha256);
    }
    tail.lastSeq = seq;
    if (!generated) this.generatedLast.delete(tail.sessionNo);
    else {
      if (this.generatedLast.size >= FOLLOWED_SESSIONS) this.generatedLast.clear();
      this.generatedLast.set(tail.sessionNo, original.id);
    }
    if (original.type !== "session") tail.leaf = original.id;
    // The caller's result itself, not a copy made later to mark it new: an import builds one per
    // event, and a second object per event was most of what V8's young generation promoted to the
    // old one during it (the doctor's peak RSS, bench/doctor.mjs).
    const stored: AppendResult = {
      sessionId: batch.sessionId,
      seq,
      event: original,
      createdAt,
      deduplicated: false,
    };
    batch.known?.set(original.id, stored);
    return stored;
  }

  /**
   * Inserts an event whose id was just drawn. The unique key finds the one-in-four-billion
   * collision with a stored id, instead of a lookup before every append; the id is drawn again.
   * The id is part of the stored JSON, so a new id means a new encoding.
   */
  private insertGenerated(
    sessionNo: number,
    event: TranscriptEvent,
    attempt: () => number | bigint,
  ): number | bigint {
    for (;;) {
      try {
        return attempt();
      } catch (error) {
        if (
          !isStateError(error, "E_CONSTRAINT") ||
          this.selectKnownId.get(sessionNo, event.id) === undefined
        ) {
          throw error;
        }
        event.id = newEventId();
      }
    }
  }

  private sameOrConflict(stored: StoredEvent, event: TranscriptEvent): AppendResult {
    if (encodeEvent(stored.event) === encodeEvent(event)) return { ...stored, deduplicated: true };
    throw new StateError(
      "E_CONFLICT",
      `session ${stored.sessionId} already has a different event with id ${event.id}`,
      { details: { sessionId: stored.sessionId, eventId: event.id, seq: stored.seq } },
    );
  }

  private decode(row: EventRow, sessionId: string): StoredEvent {
    let event = JSON.parse(row.event_json) as TranscriptEvent;
    if (row.event_json.includes(BLOB_REF_PREFIX)) {
      event = restoreInlineBlobs(event, (sha) => {
        const blob = this.selectBlob.get(sha);
        return blob ? Buffer.from(blob.data) : undefined;
      });
    }
    return { sessionId, seq: row.seq, event, createdAt: row.created_at };
  }

  private checkAppendOptions(options: object): void {
    rejectUnknownOptions(
      options,
      APPEND_OPTION_KEYS,
      "append",
      (key) => `Unknown append option: ${key}`,
    );
  }
}
