import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
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
} from "../stores/global/plugin-state-rows.js";
import { PLUGIN_STATE_SQL } from "../stores/global/plugin-state-sql.js";
import type { JsonValue } from "../stores/json.js";
import type { ControlPlanePluginState } from "./control-plane.js";
import { pgStatements, query } from "./pg-statements.js";

// Every write is one statement: the upsert's conflict arm and `seen`'s guarded update run under
// the row lock PostgreSQL's ON CONFLICT takes, so racing hosts serialize per key.
const SQL = pgStatements("plugin_state", {
  ...PLUGIN_STATE_SQL,
  delete: `${PLUGIN_STATE_SQL.delete} RETURNING 1 AS gone`,
});

/** Plugin state on PostgreSQL: `PluginStateStore`'s statements and checks. */
export class PgPluginState implements ControlPlanePluginState {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async get<T = JsonValue>(pluginId: string, namespace: string, key: string) {
    return (await this.getEntry<T>(pluginId, namespace, key))?.value;
  }

  async getEntry<T = JsonValue>(
    pluginId: string,
    namespace: string,
    key: string,
  ): Promise<PluginStateEntry<T> | undefined> {
    const params = { ...entryAddress(pluginId, namespace, key), now: this.clock() };
    const [row] = await query<PluginStateRow>(this.pool, SQL.select, params);
    return row ? fromRow<T>(row) : undefined;
  }

  async set<T extends JsonValue>(
    pluginId: string,
    namespace: string,
    key: string,
    value: T,
    options: PluginSetOptions = {},
  ): Promise<PluginStateEntry<T>> {
    const params = setParams(pluginId, namespace, key, value, options, this.clock);
    const [row] = await query<PluginStateRow>(this.pool, SQL.upsert, params);
    return fromRow<T>(row as PluginStateRow);
  }

  async delete(pluginId: string, namespace: string, key: string): Promise<boolean> {
    const rows = await query(this.pool, SQL.delete, entryAddress(pluginId, namespace, key));
    return rows.length > 0;
  }

  async list<T = JsonValue>(
    pluginId: string,
    namespace: string,
    options: PluginListOptions = {},
  ): Promise<PluginStateEntry<T>[]> {
    const { range, params } = listQuery(pluginId, namespace, options, this.clock);
    const rows = await query<PluginStateRow>(
      this.pool,
      range ? SQL.listRange : SQL.listAll,
      params,
    );
    return rows.map((row) => fromRow<T>(row));
  }

  async seen(pluginId: string, namespace: string, key: string, ttlMs: number): Promise<boolean> {
    const params = seenParams(pluginId, namespace, key, ttlMs, this.clock);
    return (await query(this.pool, SQL.markSeen, params)).length > 0;
  }
}
