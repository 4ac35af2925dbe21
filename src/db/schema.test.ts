import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_COLUMNS, AGENT_DATABASE_COLUMNS } from "../home.js";
import { RUN_ARTIFACT_COLUMNS, TOOL_ARTIFACT_COLUMNS } from "../stores/agent/artifact-store.js";
import { CACHE_ENTRY_COLUMNS } from "../stores/agent/cache-store.js";
import { COLD_INDEX_SESSION_COLUMNS } from "../stores/agent/cold-index.js";
import { CONTEXT_SNAPSHOT_COLUMNS } from "../stores/agent/context-snapshot-store.js";
import { FACT_COLUMNS, FACT_HISTORY_COLUMNS, FACT_TAG_COLUMNS } from "../stores/agent/fact-rows.js";
import { INPUT_COLUMNS } from "../stores/agent/input-rows.js";
import { SESSION_STATE_COLUMNS } from "../stores/agent/memory-state-store.js";
import { SESSION_ENTRY_COLUMNS } from "../stores/agent/session-store.js";
import { TOPIC_COLUMNS, TOPIC_MEMBERSHIP_COLUMNS } from "../stores/agent/topic-rows.js";
import {
  COLD_INDEX_CLAIM_COLUMNS,
  COLD_SESSION_COLUMNS,
  EVENT_COLUMNS,
  SESSION_COLUMNS,
  SNAPSHOT_COLUMNS,
} from "../stores/agent/transcript-rows.js";
import { USAGE_DAILY_COLUMNS } from "../stores/agent/usage-query.js";
import { VFS_CHUNK_COLUMNS, VFS_ENTRY_COLUMNS } from "../stores/agent/vfs-table.js";
import { AGENT_LEASE_COLUMNS } from "../stores/global/agent-lease-rows.js";
import { BACKUP_RUN_COLUMNS } from "../stores/global/backup-run-store.js";
import { COMMITMENT_COLUMNS } from "../stores/global/commitment-store.js";
import { CONVERSATION_BINDING_COLUMNS } from "../stores/global/conversation-binding-store.js";
import { CONVERSATION_COLUMNS } from "../stores/global/conversation-store.js";
import { CRON_JOB_COLUMNS, CRON_RUN_LOG_COLUMNS } from "../stores/global/cron-rows.js";
import { DELIVERY_QUEUE_COLUMNS } from "../stores/global/delivery-queue-rows.js";
import { FLOW_RUN_COLUMNS } from "../stores/global/flow-store.js";
import { MEDIA_BLOB_COLUMNS } from "../stores/global/media-store.js";
import {
  MIGRATION_RUN_COLUMNS,
  MIGRATION_SOURCE_COLUMNS,
} from "../stores/global/migration-ledger-store.js";
import { MIGRATION_QUARANTINE_COLUMNS } from "../stores/global/migration-quarantine-store.js";
import { PLUGIN_BLOB_COLUMNS } from "../stores/global/plugin-blob-store.js";
import { PLUGIN_STATE_COLUMNS } from "../stores/global/plugin-state-store.js";
import { SANDBOX_REGISTRY_COLUMNS } from "../stores/global/sandbox-registry-store.js";
import { SUBAGENT_RUN_COLUMNS } from "../stores/global/subagent-run-store.js";
import { TASK_DELIVERY_COLUMNS } from "../stores/global/task-delivery-store.js";
import { TASK_RUN_COLUMNS } from "../stores/global/task-rows.js";
import { TUI_LAST_SESSION_COLUMNS } from "../stores/global/tui-session-store.js";
import { KV_COLUMNS } from "../stores/kv-store.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { type Database, openDatabase } from "./database.js";
import { isStateError } from "./errors.js";
import { type DatabaseRole, latestSchemaVersion, loadMigrations } from "./schema.js";

const tempDir = useTempDirs();

function columnsOfTable(db: Database, table: string): string[] {
  return db
    .prepare<{ name: string }>(`SELECT name FROM pragma_table_info('${table}') ORDER BY cid`)
    .all()
    .map((row) => row.name);
}

/** Row types declared in TypeScript, by role and table, checked against the committed .sql. */
const DECLARED: Record<DatabaseRole, Record<string, readonly string[]>> = {
  global: {
    kv: KV_COLUMNS,
    agents: AGENT_COLUMNS,
    agent_databases: AGENT_DATABASE_COLUMNS,
    migration_runs: MIGRATION_RUN_COLUMNS,
    migration_sources: MIGRATION_SOURCE_COLUMNS,
    migration_quarantine: MIGRATION_QUARANTINE_COLUMNS,
    backup_runs: BACKUP_RUN_COLUMNS,
    plugin_state_entries: PLUGIN_STATE_COLUMNS,
    plugin_blob_entries: PLUGIN_BLOB_COLUMNS,
    media_blobs: MEDIA_BLOB_COLUMNS,
    cron_jobs: CRON_JOB_COLUMNS,
    cron_run_logs: CRON_RUN_LOG_COLUMNS,
    task_runs: TASK_RUN_COLUMNS,
    task_delivery_state: TASK_DELIVERY_COLUMNS,
    flow_runs: FLOW_RUN_COLUMNS,
    subagent_runs: SUBAGENT_RUN_COLUMNS,
    delivery_queue_entries: DELIVERY_QUEUE_COLUMNS,
    current_conversation_bindings: CONVERSATION_BINDING_COLUMNS,
    conversations: CONVERSATION_COLUMNS,
    commitments: COMMITMENT_COLUMNS,
    tui_last_sessions: TUI_LAST_SESSION_COLUMNS,
    sandbox_registry_entries: SANDBOX_REGISTRY_COLUMNS,
    agent_leases: AGENT_LEASE_COLUMNS,
  },
  agent: {
    kv: KV_COLUMNS,
    session_entries: SESSION_ENTRY_COLUMNS,
    sessions: SESSION_COLUMNS,
    transcript_events: EVENT_COLUMNS,
    transcript_snapshots: SNAPSHOT_COLUMNS,
    vfs_entries: VFS_ENTRY_COLUMNS,
    vfs_chunks: VFS_CHUNK_COLUMNS,
    tool_artifacts: TOOL_ARTIFACT_COLUMNS,
    run_artifacts: RUN_ARTIFACT_COLUMNS,
    cache_entries: CACHE_ENTRY_COLUMNS,
    topics: TOPIC_COLUMNS,
    topic_membership: TOPIC_MEMBERSHIP_COLUMNS,
    facts: FACT_COLUMNS,
    fact_history: FACT_HISTORY_COLUMNS,
    fact_tags: FACT_TAG_COLUMNS,
    context_snapshots: CONTEXT_SNAPSHOT_COLUMNS,
    session_state: SESSION_STATE_COLUMNS,
    inputs: INPUT_COLUMNS,
    usage_daily: USAGE_DAILY_COLUMNS,
    cold_sessions: COLD_SESSION_COLUMNS,
    cold_index_claims: COLD_INDEX_CLAIM_COLUMNS,
  },
  "cold-index": {
    cold_index_sessions: COLD_INDEX_SESSION_COLUMNS,
  },
};

describe("schema migrations", () => {
  for (const role of ["global", "agent", "cold-index"] as const) {
    it(`${role}: numbered files apply in order and are recorded with their SHA-256`, () => {
      const migrations = loadMigrations(role);
      expect(migrations.length).toBe(latestSchemaVersion(role));
      expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1));
      const db = openDatabase({ path: join(tempDir(), `${role}.sqlite`), role });
      const recorded = db
        .prepare<{ version: number; sha256: string }>(
          "SELECT version, sha256 FROM schema_migrations ORDER BY version",
        )
        .all();
      expect(recorded).toEqual(
        migrations.map((m) => ({
          version: m.version,
          sha256: createHash("sha256").update(m.sql).digest("hex"),
        })),
      );
      expect(db.schemaVersion).toBe(migrations.length);
      db.close();
    });

    it(`${role}: TypeScript row types name exactly the columns of their tables`, () => {
      const db = openDatabase({ path: join(tempDir(), `${role}.sqlite`), role });
      for (const [table, declared] of Object.entries(DECLARED[role])) {
        expect(columnsOfTable(db, table), table).toEqual([...declared]);
      }
      db.close();
    });
  }

  it("refuses a database whose recorded migration differs from the shipped file", () => {
    const path = join(tempDir(), "edited.sqlite");
    const db = openDatabase({ path, role: "agent" });
    db.prepare("UPDATE schema_migrations SET sha256 = 'edited' WHERE version = 1").run();
    db.close();
    try {
      openDatabase({ path, role: "agent" });
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_SCHEMA_MISMATCH")).toBe(true);
      expect(String((error as Error).message)).toContain(path);
    }
  });

  it("applies the schema once when many connections open a new file together", async () => {
    const path = join(tempDir(), "race.sqlite");
    const handles = Array.from({ length: 8 }, () => openDatabase({ path, role: "global" }));
    const rows = handles[0]?.prepare("SELECT count(*) AS n FROM schema_migrations").get();
    expect(rows).toEqual({ n: latestSchemaVersion("global") });
    for (const handle of handles) handle.close();
  });
});
