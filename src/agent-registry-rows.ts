// The global database's registry of agents (`agents`, `agent_databases`): row shapes and the
// record `home.listAgents()` returns.
import { columnsOf } from "./db/columns.js";

export interface AgentRegistryRow {
  agent_id: string;
  config_fingerprint: string | null;
  created_at: number;
  updated_at: number;
  agent_db_path: string;
}

export interface AgentDatabaseRow {
  agent_id: string;
  path: string;
  schema_version: number;
  last_seen_at: number;
  size_bytes: number;
  quick_check: string | null;
  quick_checked_at: number | null;
}

export const AGENT_COLUMNS = columnsOf<AgentRegistryRow>()(
  "agent_id",
  "config_fingerprint",
  "created_at",
  "updated_at",
  "agent_db_path",
);
export const AGENT_DATABASE_COLUMNS = columnsOf<AgentDatabaseRow>()(
  "agent_id",
  "path",
  "schema_version",
  "last_seen_at",
  "size_bytes",
  "quick_check",
  "quick_checked_at",
);

export interface AgentRecord {
  agentId: string;
  createdAt: number;
  /** Absolute path of the agent's database. */
  dbPath: string;
  schemaVersion: number;
  lastSeenAt: number;
  sizeBytes: number;
}
