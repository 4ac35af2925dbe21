import pg from "pg";
import { checkInteger } from "../stores/checks.js";
import type { ControlPlane, PostgresControlPlaneOptions } from "./control-plane.js";
import { PgAgents } from "./pg-agents.js";
import { PgBackupRuns } from "./pg-backup-runs.js";
import { PgCommitments } from "./pg-commitments.js";
import { PgConversationBindings } from "./pg-conversation-bindings.js";
import { PgConversations } from "./pg-conversations.js";
import { CRON_CHANNEL, PgCron } from "./pg-cron.js";
import { pgSweepExpired } from "./pg-expiry.js";
import { PgFlows } from "./pg-flows.js";
import { PgLeases } from "./pg-leases.js";
import { PgListener } from "./pg-listener.js";
import { PgMedia } from "./pg-media.js";
import { migratePostgres } from "./pg-migrate.js";
import { pgMigrations } from "./pg-migrations.js";
import { PgPluginBlobs } from "./pg-plugin-blobs.js";
import { PgPluginState } from "./pg-plugin-state.js";
import { PgQueue } from "./pg-queue.js";
import { WORK_CHANNEL } from "./pg-queue-sql.js";
import { PgSubagents } from "./pg-subagents.js";
import { PgTasks } from "./pg-tasks.js";
import { CRON_SIGNAL, WorkSignal } from "./work-signal.js";

const INT8 = 20;
const NUMERIC = 1700;

/**
 * BIGINT and count(*) come back from `pg` as strings (they can exceed 2^53); agentstate's times
 * and counts are Unix milliseconds and row counts, well inside it, so they are read as numbers.
 * Per pool, not `pg.types` globally: the embedding application's own pools stay as they were.
 */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8 || oid === NUMERIC
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as "text")) as pg.CustomTypesConfig["getTypeParser"],
};

/** The control plane on PostgreSQL: the schema migrated on open, then a pool and a listener. */
export async function openPostgresControlPlane(
  options: PostgresControlPlaneOptions,
): Promise<ControlPlane> {
  const clock = options.clock ?? Date.now;
  const max = checkInteger("maxConnections", options.maxConnections ?? 10, 1, 1000);
  const timeoutMs = checkInteger("timeoutMs", options.timeoutMs ?? 10_000, 1, 3_600_000);
  const config = {
    connectionString: options.url,
    types,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    keepAlive: true,
  };
  const pool = new pg.Pool({ ...config, max });
  // An idle pooled connection dropped by the server must not crash the process: the next query
  // gets a fresh one.
  pool.on("error", () => {});
  try {
    await migratePostgres(pool, clock);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const signal = new WorkSignal();
  const cronSignal = new WorkSignal();
  const listener = new PgListener(config, {
    [WORK_CHANNEL]: (queue) => {
      if (queue) signal.wake(queue);
    },
    [CRON_CHANNEL]: () => cronSignal.wake(CRON_SIGNAL),
  });
  const listening = () => listener.ready();
  const leases = new PgLeases(pool, clock);
  const queue = new PgQueue(pool, clock, signal, listening, options.queue ?? {}, (fence) =>
    leases.fenceLost(fence),
  );
  const conversations = new PgConversations(pool, clock);
  return Object.freeze({
    backend: "postgres" as const,
    queue,
    leases,
    cron: new PgCron(pool, clock, cronSignal, listening, options.cron ?? {}),
    tasks: new PgTasks(pool, clock),
    subagents: new PgSubagents(pool, clock),
    pluginState: new PgPluginState(pool, clock),
    pluginBlobs: new PgPluginBlobs(pool, clock),
    media: new PgMedia(pool, clock),
    conversations,
    conversationBindings: new PgConversationBindings(pool, clock, conversations),
    flows: new PgFlows(pool, clock),
    commitments: new PgCommitments(pool, clock),
    backupRuns: new PgBackupRuns(pool),
    migrations: pgMigrations(pool, clock),
    agents: new PgAgents(pool, clock),
    sweepExpired: (now = clock()) => pgSweepExpired(pool, now),
    close: async () => {
      await listener.close();
      await pool.end();
    },
  });
}
