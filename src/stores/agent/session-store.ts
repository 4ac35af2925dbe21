import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { rejectUnknownOptions } from "../../db/options.js";
import { type JsonValue, toJson } from "../json.js";
import { prefixUpperBound } from "../kv-store.js";
import {
  checkColumnFilters,
  checkSort,
  decodeCursor,
  ENTRY_COLUMNS,
  encodeCursor,
  filteredListSql,
  type ListPosition,
  SESSION_TEXT_FILTERS,
  type SessionColumnFilter,
  type SessionSortKey,
} from "./session-query.js";

/** Real legacy entries reach ~70 KB (skill and prompt snapshots); this leaves ample headroom. */
export const MAX_SESSION_ENTRY_BYTES = 1024 * 1024;
export const MAX_SESSION_KEY_LENGTH = 512;
const MAX_LIST_LIMIT = 1000;
const MAX_PATCH_ATTEMPTS = 100;
const LIST_OPTION_KEYS = new Set([
  "prefix",
  "updatedSince",
  "conversationId",
  "limit",
  "cursor",
  "sort",
  ...SESSION_TEXT_FILTERS,
  "archived",
  "pinned",
]);
const PATCH_OPTION_KEYS = new Set(["expectedVersion", "maxAttempts", "conversationId"]);
const UPSERT_OPTION_KEYS = new Set(["conversationId"]);
const MAX_CONVERSATION_ID_LENGTH = 256;
// A lone UTF-16 surrogate cannot be stored as UTF-8: SQLite would see U+FFFD instead, so two
// different JS keys could name one row.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Entry fields that agentstate itself keeps in step with other rows: `sessionId` (the active
 * session, set by start/reset/compact), `compactionCount` (by compact), `turnCount`, `lastRunId`
 * and `lastRunStatus` (by a worker's finished turn). A client that wrote `sessionId` would orphan
 * the active session, and the next `ensure()` would start a second one.
 */
export const STORE_OWNED_ENTRY_FIELDS: readonly string[] = Object.freeze([
  "sessionId",
  "compactionCount",
  "turnCount",
  "lastRunId",
  "lastRunStatus",
]);

/** A session entry: a JSON object whose legacy fields (sessionId, updatedAt, origin …) are kept verbatim. */
export type SessionEntryData = { [key: string]: JsonValue };

export interface SessionEntry {
  sessionKey: string;
  entry: SessionEntryData;
  /** 1 when created, +1 on every write: the compare-and-swap token of `patch`. */
  version: number;
  updatedAt: number;
  /** The conversation (global database) the entry belongs to; absent when it belongs to none. */
  conversationId?: string;
}

/**
 * Either fields to shallow-merge over the current entry (a field set to `undefined` is removed), or
 * a synchronous function from the current entry (a fresh copy, or undefined) to the next one. The
 * function may run more than once when other writers win races, so it should not have side effects.
 */
export type SessionPatch =
  | Partial<SessionEntryData>
  | ((current: SessionEntryData | undefined) => SessionEntryData);

export interface PatchOptions {
  /** Write only if the entry is at this version (0: only if it does not exist), else E_CONFLICT. */
  expectedVersion?: number;
  /** Attempts before giving up on optimism and taking the write lock (default 8, 1 to 100). */
  maxAttempts?: number;
  /** Points the entry at this conversation (null: at none); absent: keeps the current one. */
  conversationId?: string | null;
}

export interface UpsertOptions {
  /** Points the entry at this conversation (null: at none); absent: keeps the current one. */
  conversationId?: string | null;
}

export interface SessionListOptions {
  /** Only keys starting with this string, compared literally (no wildcards). */
  prefix?: string;
  /** Only entries with `updatedAt >= updatedSince`. */
  updatedSince?: number;
  /** Only entries that belong to this conversation. */
  conversationId?: string;
  /** Only entries whose `status` is this text. */
  status?: string;
  /** Only entries whose `label` is this text. */
  label?: string;
  /** Only entries whose `channel` (else `lastChannel`) is this text. */
  channel?: string;
  /** Only entries whose `model` is this text. */
  model?: string;
  /** Only entries whose `parentSessionKey` (else `spawnedBy`) is this key. */
  parentSessionKey?: string;
  /** true: only entries with a numeric `archivedAt`; false: only the others. */
  archived?: boolean;
  /** true: only entries with a numeric `pinnedAt`; false: only the others. */
  pinned?: boolean;
  /** The order (default `updated`); see SESSION_SORT_KEYS. A cursor is valid only for its sort. */
  sort?: SessionSortKey;
  /** At most this many entries per page (default 100, at most 1000). */
  limit?: number;
  /** `nextCursor` of the previous page; absent or null for the first page. */
  cursor?: string | null;
}

export interface SessionListPage {
  /** In the order of `sort`: most recently updated first by default (ties: key descending). */
  entries: SessionEntry[];
  /** Opaque; null on the last page. */
  nextCursor: string | null;
}

interface SessionEntryRow {
  session_key: string;
  entry_json: string;
  version: number;
  updated_at: number;
  conversation_id: string | null;
}

export const SESSION_ENTRY_COLUMNS = columnsOf<SessionEntryRow>()(
  "session_key",
  "entry_json",
  "version",
  "updated_at",
  "conversation_id",
);

/**
 * A conversation id to write: `undefined` keeps the current one (bound as the keep flag 1), null
 * clears it.
 */
function checkConversationId(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (
    typeof value !== "string" ||
    value.length === 0 ||
    value.length > MAX_CONVERSATION_ID_LENGTH ||
    LONE_SURROGATE.test(value)
  ) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `invalid conversation id ${showKey(value)}: expected well-formed text of 1 to ${MAX_CONVERSATION_ID_LENGTH} characters, or null`,
    );
  }
  return value;
}

/** Bind parameters of a conversation id write: `keep` 1 leaves the column as it is. */
function conversationParams(id: string | null | undefined) {
  return { conversation: id ?? null, keep: id === undefined ? 1 : 0 };
}

/** What one patch attempt writes besides the entry. */
interface PatchWrite {
  expectedVersion: number | undefined;
  conversationId: string | null | undefined;
}

type Updater = (current: SessionEntryData | undefined) => unknown;

/** How a key shows in a message: quoted, and cut short so a huge key cannot flood a log. */
function showKey(key: unknown): string {
  if (typeof key !== "string") return key === null ? "null" : typeof key;
  return JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key);
}

function checkKey(key: unknown): string {
  if (
    typeof key !== "string" ||
    key.length === 0 ||
    key.length > MAX_SESSION_KEY_LENGTH ||
    LONE_SURROGATE.test(key)
  ) {
    const length = typeof key === "string" ? ` (${key.length} characters)` : "";
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `invalid session key ${showKey(key)}${length}: expected well-formed text of 1 to ${MAX_SESSION_KEY_LENGTH} characters`,
    );
  }
  return key;
}

function isPlainObject(value: unknown): value is SessionEntryData {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/**
 * Legacy entries carry their own `updatedAt` (Unix ms): using it as the row's updated_at keeps
 * imported sessions in their legacy order. Anything else is stamped now.
 */
function updatedAtOf(entry: SessionEntryData): number {
  const value = entry.updatedAt;
  const ms = typeof value === "number" && Number.isFinite(value) ? Math.trunc(value) : Number.NaN;
  return Number.isSafeInteger(ms) ? ms : Date.now();
}

function encodeEntry(key: string, entry: unknown): { json: string; updatedAt: number } {
  const what = `session entry ${showKey(key)}`;
  const json = isPlainObject(entry) ? toJson(entry, what) : "";
  // The JSON text is checked too: a top-level toJSON() could still turn an object into an array.
  if (!isPlainObject(entry) || !json.startsWith("{")) {
    throw new StateError("E_INVALID_ARGUMENT", `${what} must be a plain JSON object`, {
      details: { sessionKey: key },
    });
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_SESSION_ENTRY_BYTES) {
    throw new StateError(
      "E_TOO_LARGE",
      `${what} is ${bytes} bytes of JSON; the limit is ${MAX_SESSION_ENTRY_BYTES}. Keep transcripts and large artifacts in their own stores and reference them from the entry`,
      { details: { sessionKey: key, bytes, limit: MAX_SESSION_ENTRY_BYTES } },
    );
  }
  return { json, updatedAt: updatedAtOf(entry) };
}

function parseEntry(key: string, json: string): SessionEntryData {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    value = error;
  }
  if (!isPlainObject(value)) {
    throw new StateError("E_CORRUPT", `session entry ${showKey(key)} is not a JSON object`, {
      cause: value instanceof Error ? value : undefined,
      details: { sessionKey: key },
    });
  }
  return value;
}

/** A list row: the sort column's value comes along when the sort is not `updated`. */
interface ListRow extends SessionEntryRow {
  sort_value?: string | number;
}

function positionOf(sort: SessionSortKey, row: ListRow): ListPosition {
  return { sort, value: row.sort_value, updatedAt: row.updated_at, key: row.session_key };
}

function fromRow(row: SessionEntryRow): SessionEntry {
  return {
    sessionKey: row.session_key,
    entry: parseEntry(row.session_key, row.entry_json),
    version: row.version,
    updatedAt: row.updated_at,
    ...conversationField(row.conversation_id),
  };
}

/** `{ conversationId }` when there is one: an entry of no conversation has no such field. */
function conversationField(id: string | null): { conversationId?: string } {
  return id === null ? {} : { conversationId: id };
}

function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${name} must be an integer from ${min} to ${max}, got ${String(value)}`,
    );
  }
  return value;
}

function checkPatchOptions(options: PatchOptions) {
  rejectUnknownOptions(options, PATCH_OPTION_KEYS, "SessionStore.patch");
  const { expectedVersion, maxAttempts = 8 } = options;
  return {
    conversationId: checkConversationId(options.conversationId),
    expectedVersion:
      expectedVersion === undefined
        ? undefined
        : checkInteger("expectedVersion", expectedVersion, 0, Number.MAX_SAFE_INTEGER),
    maxAttempts: checkInteger("maxAttempts", maxAttempts, 1, MAX_PATCH_ATTEMPTS),
  };
}

function toUpdater(patch: SessionPatch): Updater {
  if (typeof patch === "function") return patch;
  if (!isPlainObject(patch)) {
    throw new TypeError("Expected a patch object or a function for SessionStore.patch");
  }
  return (current) => ({ ...current, ...patch });
}

function computeNext(key: string, update: Updater, current: SessionEntryData | undefined): unknown {
  const next = update(current);
  if (isPromiseLike(next)) {
    // The caller gets this TypeError; the orphaned promise must not also crash the process later
    // as an unhandled rejection.
    next.then(undefined, () => {});
    throw new TypeError(
      `Expected a synchronous patch function for session ${showKey(key)}; it returned a Promise`,
    );
  }
  return next;
}

function conflict(key: string, expectedVersion: number, actualVersion: number): StateError {
  const actual = actualVersion === 0 ? "does not exist" : `is at version ${actualVersion}`;
  return new StateError(
    "E_CONFLICT",
    `session entry ${showKey(key)} ${actual}, expected version ${expectedVersion}`,
    { details: { sessionKey: key, expectedVersion, actualVersion } },
  );
}

function checkListOptions(options: SessionListOptions) {
  rejectUnknownOptions(options, LIST_OPTION_KEYS, "SessionStore.list");
  const { prefix = "", updatedSince, limit = 100, cursor } = options;
  const sort = checkSort(options.sort);
  const conversation = options.conversationId;
  if (conversation !== undefined) checkConversationId(conversation);
  if (typeof prefix !== "string" || LONE_SURROGATE.test(prefix)) {
    throw new StateError("E_INVALID_ARGUMENT", `invalid session key prefix ${showKey(prefix)}`);
  }
  if (updatedSince !== undefined && !Number.isFinite(updatedSince)) {
    throw new StateError("E_INVALID_ARGUMENT", "updatedSince must be a finite number");
  }
  return {
    // -Infinity binds as a REAL below every INTEGER: no lower bound, one statement shape.
    since: updatedSince ?? Number.NEGATIVE_INFINITY,
    prefix,
    upper: prefix === "" ? null : (prefixUpperBound(prefix) ?? null),
    conversation: conversation ?? null,
    limit: checkInteger("limit", limit, 1, MAX_LIST_LIMIT),
    sort,
    after:
      cursor === undefined || cursor === null
        ? undefined
        : decodeCursor(cursor, sort, showKey(cursor)),
    columns: checkColumnFilters(options),
  };
}

/**
 * The routing slots of an agent's conversations (`agent:main:main` …) and their metadata, one row
 * per key in the agent database. Every write touches one row; `patch` is compare-and-swap on
 * `version`, so concurrent patches from threads and processes lose nothing.
 */
export class SessionStore {
  private readonly selectOne: SqlStatement<SessionEntryRow>;
  private readonly upsertRow: SqlStatement<{ version: number; conversation_id: string | null }>;
  private readonly insertIfAbsent: SqlStatement;
  private readonly updateIfVersion: SqlStatement;
  private readonly deleteOne: SqlStatement;
  private readonly listFirst: SqlStatement<SessionEntryRow>;
  private readonly listAfter: SqlStatement<SessionEntryRow>;
  /** Filtered and sorted list shapes, prepared the first time each is asked for. */
  private readonly listShapes = new Map<string, SqlStatement<ListRow>>();

  constructor(private readonly db: Database) {
    this.selectOne = db.prepare(
      `SELECT ${ENTRY_COLUMNS} FROM session_entries WHERE session_key = ?`,
    );
    this.upsertRow = db.prepare(
      `INSERT INTO session_entries (session_key, entry_json, version, updated_at, conversation_id)
       VALUES (@key, @json, 1, @at, @conversation)
       ON CONFLICT (session_key) DO UPDATE SET entry_json = excluded.entry_json,
         version = session_entries.version + 1, updated_at = excluded.updated_at,
         conversation_id = iif(@keep, session_entries.conversation_id, excluded.conversation_id)
       RETURNING version, conversation_id`,
    );
    this.insertIfAbsent = db.prepare(
      `INSERT INTO session_entries (session_key, entry_json, version, updated_at, conversation_id)
       VALUES (@key, @json, 1, @at, @conversation) ON CONFLICT (session_key) DO NOTHING`,
    );
    this.updateIfVersion = db.prepare(
      `UPDATE session_entries SET entry_json = @json, version = version + 1, updated_at = @at,
         conversation_id = iif(@keep, conversation_id, @conversation)
       WHERE session_key = @key AND version = @version`,
    );
    this.deleteOne = db.prepare("DELETE FROM session_entries WHERE session_key = ?");
    this.listFirst = db.prepare(filteredListSql([], "updated", false));
    this.listAfter = db.prepare(filteredListSql([], "updated", true));
  }

  get(sessionKey: string): SessionEntry | undefined {
    const row = this.selectOne.get(checkKey(sessionKey));
    return row ? fromRow(row) : undefined;
  }

  /**
   * Replaces the entry whole (creating it at version 1); the version goes up by one. The entry's
   * conversation is not part of its JSON: it changes only when `conversationId` is given.
   */
  upsert(sessionKey: string, entry: SessionEntryData, options: UpsertOptions = {}): SessionEntry {
    const key = checkKey(sessionKey);
    rejectUnknownOptions(options, UPSERT_OPTION_KEYS, "SessionStore.upsert");
    const conversation = conversationParams(checkConversationId(options.conversationId));
    const { json, updatedAt } = encodeEntry(key, entry);
    // RETURNING always yields the row just written.
    const written = this.upsertRow.get({ key, json, at: updatedAt, ...conversation });
    const { version, conversation_id } = written as {
      version: number;
      conversation_id: string | null;
    };
    return {
      sessionKey: key,
      entry: JSON.parse(json) as SessionEntryData,
      version,
      updatedAt,
      ...conversationField(conversation_id),
    };
  }

  /**
   * Read, compute, compare-and-swap on `version`; on a lost race, again, the last attempt under the
   * write lock. Contention alone never fails it (short of the 30 s busy_timeout expiring: E_BUSY);
   * E_CONFLICT only when `expectedVersion` does not match.
   */
  patch(sessionKey: string, patch: SessionPatch, options: PatchOptions = {}): SessionEntry {
    const key = checkKey(sessionKey);
    const { expectedVersion, maxAttempts, conversationId } = checkPatchOptions(options);
    const update = toUpdater(patch);
    const write = { expectedVersion, conversationId };
    for (let attempt = 1; attempt < maxAttempts; attempt++) {
      const written = this.attemptPatch(key, update, write);
      if (written) return written;
    }
    // Optimistic attempts hold the write lock only for the write itself, not while the caller's
    // function runs, so they come first. After maxAttempts - 1 lost races, the last attempt runs
    // under BEGIN IMMEDIATE: holding the write lock from the read to the write, no other writer
    // can change the row in between, so it cannot lose. A patch never fails from contention alone.
    const written = this.db.tx(() => this.attemptPatch(key, update, write));
    if (!written) {
      throw new StateError("E_CONFLICT", `session entry ${showKey(key)} changed under its lock`);
    }
    return written;
  }

  delete(sessionKey: string): boolean {
    return this.deleteOne.run(checkKey(sessionKey)).changes > 0;
  }

  /** One page of entries, in the order of `sort`; follow `nextCursor` for the next page. */
  list(options: SessionListOptions = {}): SessionListPage {
    const { since, prefix, upper, conversation, limit, sort, after, columns } =
      checkListOptions(options);
    // One row more than the page tells whether another page follows, so the last page says null.
    const params = { since, prefix, upper, conversation, limit: limit + 1, ...columns };
    const bound = after && {
      afterValue: after.value,
      afterAt: after.updatedAt,
      afterKey: after.key,
    };
    const rows = this.listStatement(Object.keys(columns), sort, bound !== undefined).all(
      bound ? { ...params, ...bound } : params,
    );
    const entries = rows.slice(0, limit).map(fromRow);
    const last = rows[entries.length - 1];
    const more = rows.length > limit && last !== undefined;
    return { entries, nextCursor: more ? encodeCursor(positionOf(sort, last)) : null };
  }

  private listStatement(
    filters: string[],
    sort: SessionSortKey,
    after: boolean,
  ): SqlStatement<ListRow> {
    if (filters.length === 0 && sort === "updated") return after ? this.listAfter : this.listFirst;
    const shape = `${sort}:${after}:${filters.sort().join(",")}`;
    let statement = this.listShapes.get(shape);
    if (!statement) {
      statement = this.db.prepare(filteredListSql(filters as SessionColumnFilter[], sort, after));
      this.listShapes.set(shape, statement);
    }
    return statement;
  }

  /** One read-compute-write round; undefined when another writer changed the row in between. */
  private attemptPatch(
    key: string,
    update: Updater,
    { expectedVersion, conversationId }: PatchWrite,
  ): SessionEntry | undefined {
    const row = this.selectOne.get(key);
    const actualVersion = row?.version ?? 0;
    if (expectedVersion !== undefined && expectedVersion !== actualVersion) {
      throw conflict(key, expectedVersion, actualVersion);
    }
    // Parsed afresh on every attempt, so the function may mutate what it is given.
    const current = row ? parseEntry(key, row.entry_json) : undefined;
    const { json, updatedAt } = encodeEntry(key, computeNext(key, update, current));
    const params = { key, json, at: updatedAt, ...conversationParams(conversationId) };
    const changes = row
      ? this.updateIfVersion.run({ ...params, version: row.version }).changes
      : this.insertIfAbsent.run(params).changes;
    if (changes === 0) return undefined;
    const entry = JSON.parse(json) as SessionEntryData;
    const conversation =
      conversationId === undefined ? (row?.conversation_id ?? null) : conversationId;
    return {
      sessionKey: key,
      entry,
      version: actualVersion + 1,
      updatedAt,
      ...conversationField(conversation),
    };
  }
}
