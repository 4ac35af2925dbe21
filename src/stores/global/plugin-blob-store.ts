import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import {
  blobListParams,
  blobSetParams,
  infoFromRow,
  type PluginBlob,
  type PluginBlobInfo,
  type PluginBlobInfoRow,
  type PluginBlobListOptions,
  type PluginBlobRow,
  type PluginBlobSetOptions,
  toBuffer,
} from "./plugin-blob-rows.js";
import { PLUGIN_BLOB_SQL } from "./plugin-blob-sql.js";
import { entryAddress } from "./plugin-state-rows.js";
import type { PluginStoreOptions } from "./plugin-state-store.js";

export {
  MAX_PLUGIN_BLOB_METADATA_BYTES,
  PLUGIN_BLOB_COLUMNS,
  type PluginBlob,
  type PluginBlobInfo,
  type PluginBlobListOptions,
  type PluginBlobMetadata,
  type PluginBlobSetOptions,
} from "./plugin-blob-rows.js";

/** Bytes that plugins keep (crypto snapshots, uploads, caches), under the same address as state. */
export class PluginBlobStore {
  private readonly clock: Clock;
  private readonly selectOne: SqlStatement<PluginBlobRow & { size_bytes: number }>;
  private readonly upsert: SqlStatement<PluginBlobInfoRow>;
  private readonly deleteOne: SqlStatement;
  private readonly listPage: SqlStatement<PluginBlobInfoRow>;

  constructor(db: Database, options: PluginStoreOptions = {}) {
    this.clock = checkOptions(options, ["clock"], "PluginBlobStore").clock ?? Date.now;
    this.selectOne = db.prepare(PLUGIN_BLOB_SQL.select);
    this.upsert = db.prepare(PLUGIN_BLOB_SQL.upsert);
    this.deleteOne = db.prepare(PLUGIN_BLOB_SQL.delete);
    this.listPage = db.prepare(PLUGIN_BLOB_SQL.list);
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
    const params = blobSetParams(pluginId, namespace, key, data, options, this.clock);
    return infoFromRow(this.upsert.get(params) as PluginBlobInfoRow);
  }

  delete(pluginId: string, namespace: string, key: string): boolean {
    return this.deleteOne.run(entryAddress(pluginId, namespace, key)).changes > 0;
  }

  /** Live blobs of one plugin namespace, ordered by key, without their bytes. */
  list(pluginId: string, namespace: string, options: PluginBlobListOptions = {}): PluginBlobInfo[] {
    const params = blobListParams(pluginId, namespace, options, this.clock);
    return this.listPage.all(params).map(infoFromRow);
  }
}
