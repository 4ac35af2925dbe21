import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
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
} from "../stores/global/plugin-blob-rows.js";
import { PLUGIN_BLOB_SQL } from "../stores/global/plugin-blob-sql.js";
import { entryAddress } from "../stores/global/plugin-state-rows.js";
import type { ControlPlanePluginBlobs } from "./control-plane.js";
import { pgStatements, query } from "./pg-statements.js";

// A set is one upsert: of racing hosts on one key, the last wins with its bytes and metadata whole.
const SQL = pgStatements("plugin_blobs", {
  ...PLUGIN_BLOB_SQL,
  delete: `${PLUGIN_BLOB_SQL.delete} RETURNING 1 AS gone`,
});

/** Plugin blobs on PostgreSQL: `PluginBlobStore`'s statements and checks. */
export class PgPluginBlobs implements ControlPlanePluginBlobs {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async set(
    pluginId: string,
    namespace: string,
    key: string,
    data: Uint8Array,
    options: PluginBlobSetOptions = {},
  ): Promise<PluginBlobInfo> {
    const params = blobSetParams(pluginId, namespace, key, data, options, this.clock);
    const [row] = await query<PluginBlobInfoRow>(this.pool, SQL.upsert, params);
    return infoFromRow(row as PluginBlobInfoRow);
  }

  async get(pluginId: string, namespace: string, key: string): Promise<PluginBlob | undefined> {
    const params = { ...entryAddress(pluginId, namespace, key), now: this.clock() };
    const [row] = await query<PluginBlobRow & { size_bytes: number }>(
      this.pool,
      SQL.select,
      params,
    );
    return row ? { ...infoFromRow(row), data: toBuffer(row.blob) } : undefined;
  }

  async delete(pluginId: string, namespace: string, key: string): Promise<boolean> {
    return (await query(this.pool, SQL.delete, entryAddress(pluginId, namespace, key))).length > 0;
  }

  async list(
    pluginId: string,
    namespace: string,
    options: PluginBlobListOptions = {},
  ): Promise<PluginBlobInfo[]> {
    const params = blobListParams(pluginId, namespace, options, this.clock);
    return (await query<PluginBlobInfoRow>(this.pool, SQL.list, params)).map(infoFromRow);
  }
}
