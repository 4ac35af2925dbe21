import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  decodeJson,
  encodeJson,
  expiryOf,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import { prefixUpperBound } from "../kv-store.js";

/** Plugin state is small structured data; bytes belong in `PluginBlobStore`. */
export const MAX_PLUGIN_VALUE_BYTES = 256 * 1024;

interface PluginStateRow {
  plugin_id: string;
  namespace: string;
  entry_key: string;
  value_json: string;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
}

export const PLUGIN_STATE_COLUMNS = columnsOf<PluginStateRow>()(
  "plugin_id",
  "namespace",
  "entry_key",
  "value_json",
  "created_at",
  "updated_at",
  "expires_at",
);

export interface PluginStateEntry<T = JsonValue> {
  pluginId: string;
  namespace: string;
  key: string;
  value: T;
  createdAt: number;
  updatedAt: number;
  /** Null when the entry never expires. */
  expiresAt: number | null;
}

export interface PluginSetOptions {
  /** Time to live in ms; the entry disappears from reads once it passes. Default: forever. */
  ttlMs?: number;
}

export interface PluginListOptions {
  /** Only keys that start with this string, compared literally. */
  prefix?: string;
  /** Keyset pagination: only keys sorting after this one. */
  after?: string;
  /** At most this many entries (default 100). */
  limit?: number;
}

export interface PluginStoreOptions {
  clock?: Clock;
}

const SET_OPTIONS = ["ttlMs"] as const;
const LIST_OPTIONS = ["prefix", "after", "limit"] as const;
const COLUMNS = PLUGIN_STATE_COLUMNS.join(", ");
const LIVE = "(expires_at IS NULL OR expires_at > @now)";

function fromRow<T>(row: PluginStateRow): PluginStateEntry<T> {
  return {
    pluginId: row.plugin_id,
    namespace: row.namespace,
    key: row.entry_key,
    value: decodeJson<T>(
      `plugin state ${row.plugin_id}/${row.namespace}/${row.entry_key}`,
      row.value_json,
    ),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at,
  };
}

/** The three names that address an entry, checked once. */
export function entryAddress(pluginId: unknown, namespace: unknown, key: unknown) {
  return {
    pluginId: checkText("plugin id", pluginId, 256),
    namespace: checkText("plugin namespace", namespace, 256),
    key: checkText("plugin entry key", key),
  };
}

/**
 * State that plugins keep across restarts, under `(pluginId, namespace, key)`, in the global
 * database: JSON values with an optional time to live, and a persistent dedupe marker (`seen`).
 * Expired entries vanish from reads at once and from disk at the next `sweepExpired`.
 */
export class PluginStateStore {
  private readonly clock: Clock;
  private readonly selectOne: SqlStatement<PluginStateRow>;
  private readonly upsert: SqlStatement<PluginStateRow>;
  private readonly deleteOne: SqlStatement;
  private readonly listAll: SqlStatement<PluginStateRow>;
  private readonly listRange: SqlStatement<PluginStateRow>;
  private readonly markSeen: SqlStatement;

  constructor(db: Database, options: PluginStoreOptions = {}) {
    this.clock = checkOptions(options, ["clock"], "PluginStateStore").clock ?? Date.now;
    const key = "plugin_id = @pluginId AND namespace = @namespace";
    this.selectOne = db.prepare(
      `SELECT * FROM plugin_state_entries WHERE ${key} AND entry_key = @key AND ${LIVE}`,
    );
    // An expired row is replaced as if new: it keeps no trace of its old created_at.
    this.upsert = db.prepare(
      `INSERT INTO plugin_state_entries (${COLUMNS})
       VALUES (@pluginId, @namespace, @key, @json, @now, @now, @expiresAt)
       ON CONFLICT DO UPDATE SET value_json = excluded.value_json, updated_at = excluded.updated_at,
         expires_at = excluded.expires_at,
         created_at = iif(expires_at IS NULL OR expires_at > @now, created_at, excluded.created_at)
       RETURNING *`,
    );
    this.deleteOne = db.prepare(
      `DELETE FROM plugin_state_entries WHERE ${key} AND entry_key = @key`,
    );
    const list = `SELECT * FROM plugin_state_entries WHERE ${key} AND entry_key > @after AND ${LIVE}`;
    this.listAll = db.prepare(`${list} ORDER BY entry_key LIMIT @limit`);
    this.listRange = db.prepare(
      `${list} AND entry_key >= @prefix AND entry_key < @upper ORDER BY entry_key LIMIT @limit`,
    );
    // One statement, so concurrent callers serialize on SQLite's write lock: the insert wins for
    // exactly one of them; the others hit the live row, whose update the WHERE turns into a no-op
    // that returns nothing. An expired marker is revived as if it were new.
    this.markSeen = db.prepare(
      `INSERT INTO plugin_state_entries (${COLUMNS})
       VALUES (@pluginId, @namespace, @key, 'true', @now, @now, @expiresAt)
       ON CONFLICT DO UPDATE SET value_json = 'true', created_at = excluded.created_at,
         updated_at = excluded.updated_at, expires_at = excluded.expires_at
       WHERE plugin_state_entries.expires_at IS NOT NULL AND plugin_state_entries.expires_at <= @now
       RETURNING 1`,
    );
  }

  get<T = JsonValue>(pluginId: string, namespace: string, key: string): T | undefined {
    return this.getEntry<T>(pluginId, namespace, key)?.value;
  }

  getEntry<T = JsonValue>(
    pluginId: string,
    namespace: string,
    key: string,
  ): PluginStateEntry<T> | undefined {
    const row = this.selectOne.get({
      ...entryAddress(pluginId, namespace, key),
      now: this.clock(),
    });
    return row ? fromRow<T>(row) : undefined;
  }

  set<T extends JsonValue>(
    pluginId: string,
    namespace: string,
    key: string,
    value: T,
    options: PluginSetOptions = {},
  ): PluginStateEntry<T> {
    const address = entryAddress(pluginId, namespace, key);
    const { ttlMs } = checkOptions(options, SET_OPTIONS, "PluginStateStore.set");
    const what = `plugin state ${address.pluginId}/${address.namespace}/${address.key}`;
    const json = encodeJson(what, value, MAX_PLUGIN_VALUE_BYTES);
    const now = this.clock();
    const row = this.upsert.get({ ...address, json, now, expiresAt: expiryOf(now, ttlMs) });
    return fromRow<T>(row as PluginStateRow);
  }

  /** Removes the entry, expired or not; true when there was one. */
  delete(pluginId: string, namespace: string, key: string): boolean {
    return this.deleteOne.run(entryAddress(pluginId, namespace, key)).changes > 0;
  }

  /** Live entries of one plugin namespace, ordered by key. */
  list<T = JsonValue>(
    pluginId: string,
    namespace: string,
    options: PluginListOptions = {},
  ): PluginStateEntry<T>[] {
    const checked = checkOptions(options, LIST_OPTIONS, "PluginStateStore.list");
    const { prefix, after = "" } = checked;
    const params = {
      pluginId: checkText("plugin id", pluginId, 256),
      namespace: checkText("plugin namespace", namespace, 256),
      after: after === "" ? after : checkText("after", after),
      limit: checkLimit(checked.limit),
      now: this.clock(),
    };
    const upper = prefix ? prefixUpperBound(checkText("prefix", prefix)) : undefined;
    const rows =
      prefix && upper !== undefined
        ? this.listRange.all({ ...params, prefix, upper })
        : this.listAll.all({ ...params, after: prefix && prefix > after ? prefix : after });
    return rows.map((row) => fromRow<T>(row));
  }

  /**
   * Persistent dedupe: records `key` as seen for `ttlMs` and returns true when it was new — exactly
   * once per live key, across threads and processes. After the TTL, the key counts as new again.
   */
  seen(pluginId: string, namespace: string, key: string, ttlMs: number): boolean {
    const now = this.clock();
    const params = {
      ...entryAddress(pluginId, namespace, key),
      now,
      expiresAt: expiryOf(now, ttlMs),
    };
    return this.markSeen.get(params) !== undefined;
  }
}
