import type { Database } from "../db/database.js";
import { type AutoVacuum, readFreeSpace } from "../db/free-pages.js";
import type { DatabaseRole } from "../db/schema.js";
import type { StateHome } from "../home.js";
import type { QuickCheckRecord } from "../stores/global/quick-check-store.js";
import { describeStorage, type HomeStorage } from "./storage-budget.js";

export interface DatabaseStatus {
  role: DatabaseRole;
  agentId: string | null;
  path: string;
  bytes: number;
  schemaVersion: number;
  /** `"ok"`, or the problems `PRAGMA quick_check` found, joined. */
  quickCheck: string;
  /**
   * An agent database's last background quick_check (`agentstate gc` runs it), or null: never
   * checked, or the global database.
   */
  lastQuickCheck: { result: string; at: number } | null;
  /** Rows per table, by table name (FTS shadow tables left out). */
  tables: Record<string, number>;
  /**
   * `incremental`: its free pages are given back to the filesystem in the background. `none`: a
   * database from an older release; `agentstate gc --vacuum` switches it.
   */
  autoVacuum: AutoVacuum;
  /** Bytes of the file on its freelist: holding no data, not given back yet. */
  freeBytes: number;
}

/** A database's auto-vacuum mode and free bytes, as `DatabaseStatus` reports them. */
export function vacuumStatus(db: Database): Pick<DatabaseStatus, "autoVacuum" | "freeBytes"> {
  const { autoVacuum, freeBytes } = readFreeSpace(db);
  return { autoVacuum, freeBytes };
}

/** One agent's activity: how many sessions it has and when any of them last changed. */
export interface AgentActivity {
  agentId: string;
  sessions: number;
  /** The latest `updated_at` of its sessions and session entries (Unix ms), or null. */
  lastActivityAt: number | null;
}

export interface RunSummary {
  id: string;
  at: number;
  status: string;
}

export interface HomeStatus {
  home: string;
  databases: DatabaseStatus[];
  agents: AgentActivity[];
  /** The most recent backup run (any status), or null. */
  lastBackup: (RunSummary & { archive: string }) | null;
  /** The most recent `doctor --fix` run, or null; `partial` when sources are still left. */
  lastMigration: RunSummary | null;
  /** Hot and cold bytes per agent and the home's total, against the maintenance budget. */
  storage: HomeStorage;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function countRows(db: Database): Record<string, number> {
  const tables = db
    .prepare<{ name: string; sql: string | null }>(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .all();
  const virtual = tables
    .filter((t) => /^\s*CREATE\s+VIRTUAL\s+TABLE/i.test(t.sql ?? ""))
    .map((t) => `${t.name}_`);
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    if (virtual.some((prefix) => name.startsWith(prefix))) continue;
    const row = db.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${quoteIdent(name)}`).get();
    counts[name] = row?.n ?? 0;
  }
  return counts;
}

function describeDatabase(
  db: Database,
  agentId: string | null,
  last: QuickCheckRecord | undefined,
): DatabaseStatus {
  return {
    role: db.role,
    agentId,
    path: db.path,
    bytes: db.sizeBytes(),
    schemaVersion: db.schemaVersion,
    quickCheck: db.quickCheck().join("; "),
    lastQuickCheck: last ? { result: last.result, at: last.checkedAt } : null,
    tables: countRows(db),
    ...vacuumStatus(db),
  };
}

function activityOf(db: Database, agentId: string): AgentActivity {
  // Both maxima read the end of an index, whatever the number of sessions.
  const row = db
    .prepare<{ sessions: number; sessionAt: number | null; entryAt: number | null }>(
      `SELECT (SELECT count(*) FROM sessions) AS sessions,
              (SELECT max(updated_at) FROM sessions) AS sessionAt,
              (SELECT max(updated_at) FROM session_entries) AS entryAt`,
    )
    .get();
  const times = [row?.sessionAt, row?.entryAt].filter((t): t is number => typeof t === "number");
  return {
    agentId,
    sessions: row?.sessions ?? 0,
    lastActivityAt: times.length > 0 ? Math.max(...times) : null,
  };
}

/**
 * What a home holds: every database with its role, size, schema, health and row counts; each
 * agent's last activity; the last backup and the last migration run.
 */
export function describeHome(home: StateHome): HomeStatus {
  const databases = [describeDatabase(home.db, null, undefined)];
  const agents: AgentActivity[] = [];
  const checks = new Map(home.quickChecks.list().map((check) => [check.agentId, check]));
  for (const { agentId } of home.listAgents()) {
    // One agent at a time through the pool: a home of thousands never has them all open.
    home.withAgent(
      agentId,
      ({ db }) => {
        databases.push(describeDatabase(db, agentId, checks.get(agentId)));
        agents.push(activityOf(db, agentId));
      },
      { create: false },
    );
  }
  const [backup] = home.backups.list(1);
  const [migration] = home.migrations.listRuns(1);
  return {
    home: home.path,
    databases,
    agents,
    lastBackup: backup
      ? { id: backup.id, at: backup.createdAt, status: backup.status, archive: backup.archivePath }
      : null,
    lastMigration: migration
      ? { id: migration.id, at: migration.startedAt, status: migration.status }
      : null,
    storage: describeStorage(home),
  };
}
