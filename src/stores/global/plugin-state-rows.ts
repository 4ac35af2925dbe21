import { columnsOf } from "../../db/columns.js";
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

export interface PluginStateRow {
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

const SET_OPTIONS = ["ttlMs"] as const;
const LIST_OPTIONS = ["prefix", "after", "limit"] as const;

export function fromRow<T>(row: PluginStateRow): PluginStateEntry<T> {
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

/** The upsert's parameters for `set`, every argument checked before any statement runs. */
export function setParams(
  pluginId: unknown,
  namespace: unknown,
  key: unknown,
  value: unknown,
  options: PluginSetOptions,
  clock: Clock,
) {
  const address = entryAddress(pluginId, namespace, key);
  const { ttlMs } = checkOptions(options, SET_OPTIONS, "PluginStateStore.set");
  const what = `plugin state ${address.pluginId}/${address.namespace}/${address.key}`;
  const json = encodeJson(what, value, MAX_PLUGIN_VALUE_BYTES);
  const now = clock();
  return { ...address, json, now, expiresAt: expiryOf(now, ttlMs) };
}

/** The parameters for `seen`: the address, now, and when the marker lapses. */
export function seenParams(
  pluginId: unknown,
  namespace: unknown,
  key: unknown,
  ttlMs: unknown,
  clock: Clock,
) {
  const now = clock();
  return { ...entryAddress(pluginId, namespace, key), now, expiresAt: expiryOf(now, ttlMs) };
}

/**
 * Which list statement a `list` call runs, and with what: a prefix becomes a key range (or, when
 * no key can follow it, a lower bound only).
 */
export function listQuery(
  pluginId: unknown,
  namespace: unknown,
  options: PluginListOptions,
  clock: Clock,
) {
  const checked = checkOptions(options, LIST_OPTIONS, "PluginStateStore.list");
  const { prefix, after = "" } = checked;
  const params = {
    pluginId: checkText("plugin id", pluginId, 256),
    namespace: checkText("plugin namespace", namespace, 256),
    after: after === "" ? after : checkText("after", after),
    limit: checkLimit(checked.limit),
    now: clock(),
  };
  const upper = prefix ? prefixUpperBound(checkText("prefix", prefix)) : undefined;
  if (prefix && upper !== undefined) {
    return { range: true as const, params: { ...params, prefix, upper } };
  }
  const from = prefix && prefix > params.after ? prefix : params.after;
  return { range: false as const, params: { ...params, after: from } };
}
