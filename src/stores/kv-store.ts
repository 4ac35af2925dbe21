import { columnsOf } from "../db/columns.js";
import type { Database } from "../db/database.js";
import type { SqlStatement } from "../db/driver.js";
import { StateError } from "../db/errors.js";
import { type JsonValue, toJson } from "./json.js";

/** Values above this belong in blob storage (artifacts, plugin blobs, the scratch FS), not kv. */
export const MAX_KV_VALUE_BYTES = 64 * 1024;
const MAX_SCOPE_LENGTH = 256;
const MAX_KEY_LENGTH = 1024;
const MAX_LIST_LIMIT = 10_000;

interface KvRow {
  scope: string;
  key: string;
  value_json: string;
  updated_at: number;
}

export const KV_COLUMNS = columnsOf<KvRow>()("scope", "key", "value_json", "updated_at");

export interface KvEntry<T = JsonValue> {
  scope: string;
  key: string;
  value: T;
  updatedAt: number;
}

export interface KvListOptions {
  /** Only keys that start with this string. */
  prefix?: string;
  /** Keyset pagination: only keys sorting after this one. */
  after?: string;
  /** At most this many entries (default 100). */
  limit?: number;
}

function fromRow<T>(row: KvRow): KvEntry<T> {
  return {
    scope: row.scope,
    key: row.key,
    value: JSON.parse(row.value_json) as T,
    updatedAt: row.updated_at,
  };
}

function checkName(kind: "scope" | "key", value: unknown, max: number): string {
  if (typeof value !== "string" || value.length === 0 || value.length > max) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `kv ${kind} must be a string of 1 to ${max} characters, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/**
 * The smallest string above every string that starts with `prefix`, in SQLite's BINARY (UTF-8
 * byte) order, which is code point order: a prefix scan is then an index range, not a LIKE scan.
 * Undefined when no such bound exists (a prefix of only U+10FFFF).
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0) as number);
  while (points.length > 0 && points[points.length - 1] === 0x10ffff) points.pop();
  const last = points.pop();
  if (last === undefined) return undefined;
  const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return String.fromCodePoint(...points, next);
}

/**
 * Small structured state under `(scope, key)`, readable with the sqlite3 shell. Lives in the global
 * database and in each agent database with the same shape.
 */
export class KvStore {
  private readonly selectOne: SqlStatement<KvRow>;
  private readonly upsert: SqlStatement;
  private readonly deleteOne: SqlStatement;
  private readonly listAll: SqlStatement<KvRow>;
  private readonly listRange: SqlStatement<KvRow>;

  constructor(private readonly db: Database) {
    this.selectOne = db.prepare("SELECT * FROM kv WHERE scope = ? AND key = ?");
    this.upsert = db.prepare(
      `INSERT INTO kv (scope, key, value_json, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (scope, key) DO UPDATE SET value_json = excluded.value_json, updated_at = excluded.updated_at`,
    );
    this.deleteOne = db.prepare("DELETE FROM kv WHERE scope = ? AND key = ?");
    this.listAll = db.prepare("SELECT * FROM kv WHERE scope = ? AND key > ? ORDER BY key LIMIT ?");
    this.listRange = db.prepare(
      "SELECT * FROM kv WHERE scope = ? AND key > ? AND key >= ? AND key < ? ORDER BY key LIMIT ?",
    );
  }

  get<T = JsonValue>(scope: string, key: string): T | undefined {
    return this.getEntry<T>(scope, key)?.value;
  }

  getEntry<T = JsonValue>(scope: string, key: string): KvEntry<T> | undefined {
    const row = this.selectOne.get(
      checkName("scope", scope, MAX_SCOPE_LENGTH),
      checkName("key", key, MAX_KEY_LENGTH),
    );
    return row ? fromRow<T>(row) : undefined;
  }

  set<T extends JsonValue>(scope: string, key: string, value: T): KvEntry<T> {
    checkName("scope", scope, MAX_SCOPE_LENGTH);
    checkName("key", key, MAX_KEY_LENGTH);
    const json = toJson(value, `kv value for ${scope}/${key}`);
    const bytes = Buffer.byteLength(json);
    if (bytes > MAX_KV_VALUE_BYTES) {
      throw new StateError(
        "E_TOO_LARGE",
        `kv value for ${scope}/${key} is ${bytes} bytes of JSON; the limit is ${MAX_KV_VALUE_BYTES}. Store large values as blobs (artifacts, plugin blobs or the scratch filesystem) and keep a reference in kv`,
        { details: { scope, key, bytes, limit: MAX_KV_VALUE_BYTES } },
      );
    }
    const updatedAt = Date.now();
    this.upsert.run(scope, key, json, updatedAt);
    return { scope, key, value, updatedAt };
  }

  /**
   * Read-modify-write in one transaction: `fn` gets the current value (or undefined) and returns
   * the new one. Concurrent updaters in other threads or processes serialize on the write lock.
   */
  update<T extends JsonValue>(
    scope: string,
    key: string,
    fn: (current: T | undefined) => T,
  ): KvEntry<T> {
    return this.db.tx(() => this.set(scope, key, fn(this.get<T>(scope, key))));
  }

  delete(scope: string, key: string): boolean {
    return (
      this.deleteOne.run(
        checkName("scope", scope, MAX_SCOPE_LENGTH),
        checkName("key", key, MAX_KEY_LENGTH),
      ).changes > 0
    );
  }

  /** Entries of one scope ordered by key. */
  list<T = JsonValue>(scope: string, options: KvListOptions = {}): KvEntry<T>[] {
    checkName("scope", scope, MAX_SCOPE_LENGTH);
    const { prefix, after = "", limit = 100 } = options;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new StateError("E_INVALID_ARGUMENT", `kv list limit must be 1 to ${MAX_LIST_LIMIT}`);
    }
    const upper = prefix ? prefixUpperBound(prefix) : undefined;
    const rows =
      prefix && upper !== undefined
        ? this.listRange.all(scope, after, prefix, upper, limit)
        : this.listAll.all(scope, prefix && prefix > after ? prefix : after, limit);
    return rows.map((row) => fromRow<T>(row));
  }
}
