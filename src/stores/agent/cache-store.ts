import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { rejectUnknownOptions } from "../../db/options.js";
import { toBuffer } from "../../vfs/chunks.js";
import { type JsonValue, toJson } from "../json.js";

export const MAX_CACHE_VALUE_BYTES = 1024 * 1024;
export const MAX_CACHE_BLOB_BYTES = 64 * 1024 * 1024;
const MAX_SCOPE_LENGTH = 256;
const MAX_KEY_LENGTH = 1024;

interface CacheEntryRow {
  scope: string;
  key: string;
  value_json: string | null;
  blob: Uint8Array | null;
  expires_at: number | null;
  updated_at: number;
}

export const CACHE_ENTRY_COLUMNS = columnsOf<CacheEntryRow>()(
  "scope",
  "key",
  "value_json",
  "blob",
  "expires_at",
  "updated_at",
);

export interface CacheEntry<T = JsonValue> {
  scope: string;
  key: string;
  /** The JSON value, or undefined when the entry holds only bytes. */
  value: T | undefined;
  data: Buffer | null;
  /** Unix ms after which the entry is gone (live while now < expiresAt); null: no expiry. */
  expiresAt: number | null;
  updatedAt: number;
}

export interface CacheSet<T extends JsonValue = JsonValue> {
  value?: T;
  data?: string | Uint8Array;
  /** Lifetime from now, in ms. */
  ttlMs?: number;
  /** Absolute expiry, Unix ms (instead of `ttlMs`). */
  expiresAt?: number;
}

export interface CacheStoreOptions {
  /** The time source (default `Date.now`); tests pass a fake clock. */
  clock?: () => number;
}

function checkName(kind: "scope" | "key", value: unknown, max: number): string {
  if (typeof value !== "string" || value.length === 0 || value.length > max) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `cache ${kind} must be a string of 1 to ${max} characters, got ${JSON.stringify(value)?.slice(0, 80)}`,
    );
  }
  return value;
}

function fromRow<T>(row: CacheEntryRow): CacheEntry<T> {
  return {
    scope: row.scope,
    key: row.key,
    value: row.value_json === null ? undefined : (JSON.parse(row.value_json) as T),
    data: row.blob ? toBuffer(row.blob) : null,
    expiresAt: row.expires_at,
    updatedAt: row.updated_at,
  };
}

function tooLarge(what: string, bytes: number, limit: number): StateError {
  return new StateError("E_TOO_LARGE", `${what} is ${bytes} bytes; the limit is ${limit}`, {
    details: { bytes, limit },
  });
}

/**
 * Agent-local runtime caches under `(scope, key)`: a JSON value and/or bytes with an optional
 * expiry. `get` never returns an expired entry, swept or not; `sweepExpired` is one DELETE over
 * the expiry index, never a scan of live rows.
 */
export class CacheStore {
  private readonly clock: () => number;
  private readonly selectLive: SqlStatement<CacheEntryRow>;
  private readonly upsert: SqlStatement;
  private readonly deleteOne: SqlStatement;
  private readonly deleteScope: SqlStatement;
  private readonly deleteExpired: SqlStatement;

  constructor(db: Database, options: CacheStoreOptions = {}) {
    rejectUnknownOptions(options, ["clock"], "new CacheStore");
    this.clock = options.clock ?? Date.now;
    this.selectLive = db.prepare(
      "SELECT * FROM cache_entries WHERE scope = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)",
    );
    this.upsert = db.prepare(
      `INSERT INTO cache_entries (scope, key, value_json, blob, expires_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (scope, key) DO UPDATE SET value_json = excluded.value_json, blob = excluded.blob,
         expires_at = excluded.expires_at, updated_at = excluded.updated_at`,
    );
    this.deleteOne = db.prepare("DELETE FROM cache_entries WHERE scope = ? AND key = ?");
    this.deleteScope = db.prepare("DELETE FROM cache_entries WHERE scope = ?");
    this.deleteExpired = db.prepare(
      "DELETE FROM cache_entries WHERE expires_at IS NOT NULL AND expires_at <= ?",
    );
  }

  /** The live entry, or undefined when missing or expired (even if not swept yet). */
  get<T = JsonValue>(scope: string, key: string): CacheEntry<T> | undefined {
    const row = this.selectLive.get(
      checkName("scope", scope, MAX_SCOPE_LENGTH),
      checkName("key", key, MAX_KEY_LENGTH),
      this.clock(),
    );
    return row ? fromRow<T>(row) : undefined;
  }

  /** Stores (or replaces) an entry: a value, bytes or both, with `ttlMs` or `expiresAt`. */
  set<T extends JsonValue>(scope: string, key: string, entry: CacheSet<T>): CacheEntry<T> {
    checkName("scope", scope, MAX_SCOPE_LENGTH);
    checkName("key", key, MAX_KEY_LENGTH);
    rejectUnknownOptions(entry, ["value", "data", "ttlMs", "expiresAt"], "cache.set");
    if (entry.value === undefined && entry.data === undefined) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `cache entry ${scope}/${key} needs a value or data`,
      );
    }
    const json =
      entry.value === undefined ? null : toJson(entry.value, `cache value ${scope}/${key}`);
    if (json !== null && Buffer.byteLength(json) > MAX_CACHE_VALUE_BYTES) {
      throw tooLarge(`cache value ${scope}/${key}`, Buffer.byteLength(json), MAX_CACHE_VALUE_BYTES);
    }
    const data = entry.data === undefined ? null : toBuffer(entry.data);
    if (data && data.length > MAX_CACHE_BLOB_BYTES) {
      throw tooLarge(`cache data ${scope}/${key}`, data.length, MAX_CACHE_BLOB_BYTES);
    }
    const now = this.clock();
    const expiresAt = this.expiryOf(entry, now, `${scope}/${key}`);
    this.upsert.run(scope, key, json, data, expiresAt, now);
    return { scope, key, value: entry.value, data, expiresAt, updatedAt: now };
  }

  delete(scope: string, key: string): boolean {
    const changes = this.deleteOne.run(
      checkName("scope", scope, MAX_SCOPE_LENGTH),
      checkName("key", key, MAX_KEY_LENGTH),
    ).changes;
    return changes > 0;
  }

  /** Drops every entry of a scope; returns how many. */
  clearScope(scope: string): number {
    return this.deleteScope.run(checkName("scope", scope, MAX_SCOPE_LENGTH)).changes;
  }

  /** Deletes every entry expired at `now` (expiresAt <= now) in one statement; returns how many. */
  sweepExpired(now: number = this.clock()): number {
    if (!Number.isSafeInteger(now)) {
      throw new TypeError(`Expected sweepExpired(now) to be Unix ms, got ${now}`);
    }
    return this.deleteExpired.run(now).changes;
  }

  private expiryOf(entry: CacheSet, now: number, where: string): number | null {
    if (entry.ttlMs !== undefined && entry.expiresAt !== undefined) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `cache entry ${where}: give ttlMs or expiresAt, not both`,
      );
    }
    if (entry.ttlMs !== undefined) {
      if (!Number.isSafeInteger(entry.ttlMs) || entry.ttlMs <= 0) {
        throw new StateError(
          "E_INVALID_ARGUMENT",
          `cache entry ${where}: ttlMs must be a positive integer`,
        );
      }
      return now + entry.ttlMs;
    }
    if (entry.expiresAt !== undefined && !Number.isSafeInteger(entry.expiresAt)) {
      throw new StateError("E_INVALID_ARGUMENT", `cache entry ${where}: expiresAt must be Unix ms`);
    }
    return entry.expiresAt ?? null;
  }
}
