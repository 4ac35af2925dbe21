import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  decodeJson,
  encodeRecord,
} from "../checks.js";
import type { JsonValue } from "../json.js";

interface SandboxRegistryRow {
  registry_kind: string;
  container_name: string;
  entry_json: string;
  updated_at: number;
}

export const SANDBOX_REGISTRY_COLUMNS = columnsOf<SandboxRegistryRow>()(
  "registry_kind",
  "container_name",
  "entry_json",
  "updated_at",
);

export type SandboxEntryData = { [key: string]: JsonValue };

export interface SandboxRegistryEntry {
  /** Which registry: `containers`, `browsers` … */
  kind: string;
  containerName: string;
  /** The registry's record of the container (image, session, last use …), verbatim. */
  entry: SandboxEntryData;
  updatedAt: number;
}

function fromRow(row: SandboxRegistryRow): SandboxRegistryEntry {
  return {
    kind: row.registry_kind,
    containerName: row.container_name,
    entry: decodeJson(`sandbox ${row.registry_kind}/${row.container_name}`, row.entry_json),
    updatedAt: row.updated_at,
  };
}

/** Sandbox containers and browsers the gateway started (`sandbox_registry_entries`), one row each. */
export class SandboxRegistryStore {
  private readonly clock: Clock;
  private readonly upsert: SqlStatement<SandboxRegistryRow>;
  private readonly selectOne: SqlStatement<SandboxRegistryRow>;
  private readonly deleteOne: SqlStatement;
  private readonly byKind: SqlStatement<SandboxRegistryRow>;

  constructor(db: Database, options: { clock?: Clock } = {}) {
    this.clock = checkOptions(options, ["clock"], "SandboxRegistryStore").clock ?? Date.now;
    this.upsert = db.prepare(
      `INSERT INTO sandbox_registry_entries (registry_kind, container_name, entry_json, updated_at)
       VALUES (?, ?, ?, ?)
       ON CONFLICT DO UPDATE SET entry_json = excluded.entry_json, updated_at = excluded.updated_at
       RETURNING *`,
    );
    const key = "registry_kind = ? AND container_name = ?";
    this.selectOne = db.prepare(`SELECT * FROM sandbox_registry_entries WHERE ${key}`);
    this.deleteOne = db.prepare(`DELETE FROM sandbox_registry_entries WHERE ${key}`);
    this.byKind = db.prepare(
      `SELECT * FROM sandbox_registry_entries WHERE registry_kind = ?
       ORDER BY updated_at DESC, container_name LIMIT ?`,
    );
  }

  put(kind: string, containerName: string, entry: SandboxEntryData): SandboxRegistryEntry {
    const k = checkText("sandbox registry kind", kind, 64);
    const name = checkText("container name", containerName, 256);
    const json = encodeRecord(`sandbox ${k}/${name}`, entry, 256 * 1024);
    return fromRow(this.upsert.get(k, name, json, this.clock()) as SandboxRegistryRow);
  }

  get(kind: string, containerName: string): SandboxRegistryEntry | undefined {
    const row = this.selectOne.get(
      checkText("sandbox registry kind", kind, 64),
      checkText("container name", containerName, 256),
    );
    return row ? fromRow(row) : undefined;
  }

  delete(kind: string, containerName: string): boolean {
    return (
      this.deleteOne.run(
        checkText("sandbox registry kind", kind, 64),
        checkText("container name", containerName, 256),
      ).changes > 0
    );
  }

  /** Entries of one registry, most recently updated first. */
  list(kind: string, options: { limit?: number } = {}): SandboxRegistryEntry[] {
    const { limit } = checkOptions(options, ["limit"], "SandboxRegistryStore.list");
    return this.byKind
      .all(checkText("sandbox registry kind", kind, 64), checkLimit(limit))
      .map(fromRow);
  }
}
