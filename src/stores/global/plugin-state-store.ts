import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import type { JsonValue } from "../json.js";
import {
  entryAddress,
  fromRow,
  listQuery,
  type PluginListOptions,
  type PluginSetOptions,
  type PluginStateEntry,
  type PluginStateRow,
  seenParams,
  setParams,
} from "./plugin-state-rows.js";
import { PLUGIN_STATE_SQL } from "./plugin-state-sql.js";

export {
  entryAddress,
  MAX_PLUGIN_VALUE_BYTES,
  PLUGIN_STATE_COLUMNS,
  type PluginListOptions,
  type PluginSetOptions,
  type PluginStateEntry,
} from "./plugin-state-rows.js";

export interface PluginStoreOptions {
  clock?: Clock;
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
    this.selectOne = db.prepare(PLUGIN_STATE_SQL.select);
    this.upsert = db.prepare(PLUGIN_STATE_SQL.upsert);
    this.deleteOne = db.prepare(PLUGIN_STATE_SQL.delete);
    this.listAll = db.prepare(PLUGIN_STATE_SQL.listAll);
    this.listRange = db.prepare(PLUGIN_STATE_SQL.listRange);
    this.markSeen = db.prepare(PLUGIN_STATE_SQL.markSeen);
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
    const row = this.upsert.get(setParams(pluginId, namespace, key, value, options, this.clock));
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
    const { range, params } = listQuery(pluginId, namespace, options, this.clock);
    const rows = range ? this.listRange.all(params) : this.listAll.all(params);
    return rows.map((row) => fromRow<T>(row));
  }

  /**
   * Persistent dedupe: records `key` as seen for `ttlMs` and returns true when it was new — exactly
   * once per live key, across threads and processes. After the TTL, the key counts as new again.
   */
  seen(pluginId: string, namespace: string, key: string, ttlMs: number): boolean {
    return this.markSeen.get(seenParams(pluginId, namespace, key, ttlMs, this.clock)) !== undefined;
  }
}
