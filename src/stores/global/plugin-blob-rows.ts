import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  decodeJson,
  encodeRecord,
  expiryOf,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import { entryAddress } from "./plugin-state-rows.js";

/** Metadata describes the bytes (content type, origin …); it is not a second value store. */
export const MAX_PLUGIN_BLOB_METADATA_BYTES = 64 * 1024;

export interface PluginBlobRow {
  plugin_id: string;
  namespace: string;
  entry_key: string;
  metadata_json: string;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  blob: Uint8Array;
}

export const PLUGIN_BLOB_COLUMNS = columnsOf<PluginBlobRow>()(
  "plugin_id",
  "namespace",
  "entry_key",
  "metadata_json",
  "created_at",
  "updated_at",
  "expires_at",
  "blob",
);

export type PluginBlobMetadata = { [key: string]: JsonValue };

/** A blob entry without its bytes, as listed. */
export interface PluginBlobInfo {
  pluginId: string;
  namespace: string;
  key: string;
  metadata: PluginBlobMetadata;
  sizeBytes: number;
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
}

export interface PluginBlob extends PluginBlobInfo {
  data: Buffer;
}

export interface PluginBlobSetOptions {
  metadata?: PluginBlobMetadata;
  /** Time to live in ms. Default: forever. */
  ttlMs?: number;
}

export interface PluginBlobListOptions {
  /** Keyset pagination: only keys sorting after this one. */
  after?: string;
  /** At most this many entries (default 100). */
  limit?: number;
}

export type PluginBlobInfoRow = Omit<PluginBlobRow, "blob"> & { size_bytes: number };

export function infoFromRow(row: PluginBlobInfoRow): PluginBlobInfo {
  return {
    pluginId: row.plugin_id,
    namespace: row.namespace,
    key: row.entry_key,
    metadata: decodeJson(
      `plugin blob ${row.plugin_id}/${row.namespace}/${row.entry_key} metadata`,
      row.metadata_json,
    ),
    sizeBytes: row.size_bytes,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at,
  };
}

export function toBuffer(data: unknown): Buffer {
  if (!(data instanceof Uint8Array)) {
    throw new StateError("E_INVALID_ARGUMENT", "plugin blob data must be a Buffer or Uint8Array");
  }
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The upsert's parameters for `set`, every argument checked before any statement runs. */
export function blobSetParams(
  pluginId: unknown,
  namespace: unknown,
  key: unknown,
  data: unknown,
  options: PluginBlobSetOptions,
  clock: Clock,
) {
  const address = entryAddress(pluginId, namespace, key);
  const { metadata = {}, ttlMs } = checkOptions(
    options,
    ["metadata", "ttlMs"],
    "PluginBlobStore.set",
  );
  const what = `plugin blob ${address.pluginId}/${address.namespace}/${address.key} metadata`;
  const now = clock();
  return {
    ...address,
    metadata: encodeRecord(what, metadata, MAX_PLUGIN_BLOB_METADATA_BYTES),
    now,
    expiresAt: expiryOf(now, ttlMs),
    data: toBuffer(data),
  };
}

export function blobListParams(
  pluginId: unknown,
  namespace: unknown,
  options: PluginBlobListOptions,
  clock: Clock,
) {
  const { after = "", limit } = checkOptions(options, ["after", "limit"], "PluginBlobStore.list");
  return {
    pluginId: checkText("plugin id", pluginId, 256),
    namespace: checkText("plugin namespace", namespace, 256),
    after: after === "" ? after : checkText("after", after),
    limit: checkLimit(limit),
    now: clock(),
  };
}
