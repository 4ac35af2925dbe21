import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
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
import type { PluginStoreOptions } from "./plugin-state-store.js";

/** Metadata describes the bytes (content type, origin …); it is not a second value store. */
export const MAX_PLUGIN_BLOB_METADATA_BYTES = 64 * 1024;

interface PluginBlobRow {
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

type InfoRow = Omit<PluginBlobRow, "blob"> & { size_bytes: number };

const COLUMNS = PLUGIN_BLOB_COLUMNS.join(", ");
const LIVE = "(expires_at IS NULL OR expires_at > @now)";
// length() of a BLOB reads the record header only, never the bytes.
const INFO =
  "plugin_id, namespace, entry_key, metadata_json, created_at, updated_at, expires_at, length(blob) AS size_bytes";

function infoFromRow(row: InfoRow): PluginBlobInfo {
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

function toBuffer(data: unknown): Buffer {
  if (!(data instanceof Uint8Array)) {
    throw new StateError("E_INVALID_ARGUMENT", "plugin blob data must be a Buffer or Uint8Array");
  }
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** Bytes that plugins keep (crypto snapshots, uploads, caches), under the same address as state. */
export class PluginBlobStore {
  private readonly clock: Clock;
  private readonly selectOne: SqlStatement<PluginBlobRow & { size_bytes: number }>;
  private readonly upsert: SqlStatement<InfoRow>;
  private readonly deleteOne: SqlStatement;
  private readonly listPage: SqlStatement<InfoRow>;

  constructor(db: Database, options: PluginStoreOptions = {}) {
    this.clock = checkOptions(options, ["clock"], "PluginBlobStore").clock ?? Date.now;
    const key = "plugin_id = @pluginId AND namespace = @namespace";
    this.selectOne = db.prepare(
      `SELECT *, length(blob) AS size_bytes FROM plugin_blob_entries
       WHERE ${key} AND entry_key = @key AND ${LIVE}`,
    );
    this.upsert = db.prepare(
      `INSERT INTO plugin_blob_entries (${COLUMNS})
       VALUES (@pluginId, @namespace, @key, @metadata, @now, @now, @expiresAt, @data)
       ON CONFLICT DO UPDATE SET metadata_json = excluded.metadata_json, blob = excluded.blob,
         updated_at = excluded.updated_at, expires_at = excluded.expires_at,
         created_at = iif(expires_at IS NULL OR expires_at > @now, created_at, excluded.created_at)
       RETURNING ${INFO}`,
    );
    this.deleteOne = db.prepare(
      `DELETE FROM plugin_blob_entries WHERE ${key} AND entry_key = @key`,
    );
    this.listPage = db.prepare(
      `SELECT ${INFO} FROM plugin_blob_entries WHERE ${key} AND entry_key > @after AND ${LIVE}
       ORDER BY entry_key LIMIT @limit`,
    );
  }

  get(pluginId: string, namespace: string, key: string): PluginBlob | undefined {
    const row = this.selectOne.get({
      ...entryAddress(pluginId, namespace, key),
      now: this.clock(),
    });
    return row ? { ...infoFromRow(row), data: toBuffer(row.blob) } : undefined;
  }

  set(
    pluginId: string,
    namespace: string,
    key: string,
    data: Uint8Array,
    options: PluginBlobSetOptions = {},
  ): PluginBlobInfo {
    const address = entryAddress(pluginId, namespace, key);
    const { metadata = {}, ttlMs } = checkOptions(
      options,
      ["metadata", "ttlMs"],
      "PluginBlobStore.set",
    );
    const what = `plugin blob ${address.pluginId}/${address.namespace}/${address.key} metadata`;
    const now = this.clock();
    const row = this.upsert.get({
      ...address,
      metadata: encodeRecord(what, metadata, MAX_PLUGIN_BLOB_METADATA_BYTES),
      now,
      expiresAt: expiryOf(now, ttlMs),
      data: toBuffer(data),
    });
    return infoFromRow(row as InfoRow);
  }

  delete(pluginId: string, namespace: string, key: string): boolean {
    return this.deleteOne.run(entryAddress(pluginId, namespace, key)).changes > 0;
  }

  /** Live blobs of one plugin namespace, ordered by key, without their bytes. */
  list(pluginId: string, namespace: string, options: PluginBlobListOptions = {}): PluginBlobInfo[] {
    const { after = "", limit } = checkOptions(options, ["after", "limit"], "PluginBlobStore.list");
    return this.listPage
      .all({
        pluginId: checkText("plugin id", pluginId, 256),
        namespace: checkText("plugin namespace", namespace, 256),
        after: after === "" ? after : checkText("after", after),
        limit: checkLimit(limit),
        now: this.clock(),
      })
      .map(infoFromRow);
  }
}
