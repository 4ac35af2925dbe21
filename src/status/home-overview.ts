import { existsSync } from "node:fs";
import { readDamageMarker } from "../db/damage-marker.js";
import type { Database } from "../db/database.js";
import { latestSchemaVersion } from "../db/schema.js";
import type { AgentRecord, StateHome } from "../home.js";
import type { BackupRun } from "../stores/global/backup-run-store.js";
import { describeStorage, type HomeStorage } from "./storage-budget.js";

/** The last succeeded backup that holds a database, with the integrity check of its snapshot. */
export interface BackupOfDatabase {
  runId: string;
  at: number;
  /** `"ok"`, or what `PRAGMA integrity_check` reported on the snapshot. */
  integrityCheck: string;
}

export interface AgentOverview {
  agentId: string;
  /** False when the registry names a database that is not on disk. */
  present: boolean;
  /** Quarantined by `doctor` (a `.damaged` marker): not opened, its counts are null. */
  damaged: { foundAt: number; problems: string[] } | null;
  /** `created_at` of the newest transcript event (by append order), or null. */
  lastEventAt: number | null;
  /** The latest of `lastEventAt` and the sessions' and session entries' `updated_at`. */
  lastActivityAt: number | null;
  sessions: number | null;
  events: number | null;
  bytes: number | null;
  schema: { version: number; latest: number };
  lastBackup: BackupOfDatabase | null;
}

export interface MigrationOverview {
  lastRun: { id: string; status: string; startedAt: number; finishedAt: number | null } | null;
  /** The doctor ledger's legacy sources by status (`imported`, `skipped`, `warning`, `failed`). */
  sources: Record<string, number>;
}

export interface HomeOverview {
  home: string;
  agents: AgentOverview[];
  global: { bytes: number; schema: { version: number; latest: number } };
  lastBackup: { runId: string; at: number; status: string } | null;
  migration: MigrationOverview;
  totals: { agents: number; sessions: number; events: number; bytes: number };
  /** Every byte of the home, hot and cold bytes per agent, each against its budget. */
  disk: HomeStorage;
}

/** How many recent backup runs are searched for the one that holds a given database. */
const BACKUP_LOOKBACK = 20;

interface Activity {
  sessions: number;
  events: number;
  lastEventAt: number | null;
  sessionAt: number | null;
  entryAt: number | null;
}

function activityOf(db: Database): Activity {
  // The newest event is the one with the highest rowid: one step down the table's B-tree. The
  // two recency maxima read the end of an index each.
  const row = db
    .prepare<Activity>(
      `SELECT (SELECT count(*) FROM sessions) AS sessions,
              (SELECT count(*) FROM transcript_events) AS events,
              (SELECT created_at FROM transcript_events ORDER BY id DESC LIMIT 1) AS lastEventAt,
              (SELECT max(updated_at) FROM sessions) AS sessionAt,
              (SELECT max(updated_at) FROM session_entries) AS entryAt`,
    )
    .get();
  return row ?? { sessions: 0, events: 0, lastEventAt: null, sessionAt: null, entryAt: null };
}

function latestOf(...times: (number | null)[]): number | null {
  const known = times.filter((t): t is number => typeof t === "number");
  return known.length > 0 ? Math.max(...known) : null;
}

function backupHolding(runs: readonly BackupRun[], agentId: string): BackupOfDatabase | null {
  for (const run of runs) {
    if (run.status !== "succeeded") continue;
    const databases = Array.isArray(run.manifest.databases) ? run.manifest.databases : [];
    for (const db of databases) {
      if (db === null || typeof db !== "object" || Array.isArray(db)) continue;
      if (db.role !== "agent" || db.agentId !== agentId) continue;
      const check = typeof db.integrityCheck === "string" ? db.integrityCheck : "unknown";
      return { runId: run.id, at: run.createdAt, integrityCheck: check };
    }
  }
  return null;
}

function overviewOf(home: StateHome, agent: AgentRecord, runs: BackupRun[]): AgentOverview {
  const schema = { version: agent.schemaVersion, latest: latestSchemaVersion("agent") };
  const base = {
    agentId: agent.agentId,
    lastBackup: backupHolding(runs, agent.agentId),
    schema,
  };
  const empty = { lastEventAt: null, lastActivityAt: null, sessions: null, events: null };
  if (!existsSync(agent.dbPath)) {
    return { ...base, ...empty, present: false, damaged: null, bytes: null };
  }
  const damaged = readDamageMarker(agent.dbPath);
  if (damaged !== null) return { ...base, ...empty, present: true, damaged, bytes: null };
  return home.withAgent(
    agent.agentId,
    ({ db }) => {
      const a = activityOf(db);
      return {
        ...base,
        schema: { ...schema, version: db.schemaVersion },
        present: true,
        damaged: null,
        lastEventAt: a.lastEventAt,
        lastActivityAt: latestOf(a.lastEventAt, a.sessionAt, a.entryAt),
        sessions: a.sessions,
        events: a.events,
        bytes: db.sizeBytes(),
      };
    },
    { create: false },
  );
}

function migrationOf(home: StateHome): MigrationOverview {
  const [run] = home.migrations.listRuns(1);
  const rows = home.db
    .prepare<{ status: string; n: number }>(
      "SELECT status, count(*) AS n FROM migration_sources GROUP BY status ORDER BY status",
    )
    .all();
  return {
    lastRun: run
      ? { id: run.id, status: run.status, startedAt: run.startedAt, finishedAt: run.finishedAt }
      : null,
    sources: Object.fromEntries(rows.map((r) => [r.status, r.n])),
  };
}

/**
 * The whole home at a glance: per agent its last activity, sessions, events, size, schema, last
 * backup with its integrity check, and quarantine; the home's last backup and migration; totals.
 * Cheap by design: no integrity check and no full read of any database.
 */
export function homeOverview(home: StateHome): HomeOverview {
  const runs = home.backups.list(BACKUP_LOOKBACK);
  // One agent at a time through the pool: a home of thousands never has them all open.
  const agents = home.listAgents().map((agent) => overviewOf(home, agent, runs));
  const globalBytes = home.db.sizeBytes();
  const sum = (pick: (a: AgentOverview) => number | null) =>
    agents.reduce((total, a) => total + (pick(a) ?? 0), 0);
  const [last] = runs;
  return {
    home: home.path,
    agents,
    global: {
      bytes: globalBytes,
      schema: { version: home.db.schemaVersion, latest: latestSchemaVersion("global") },
    },
    lastBackup: last ? { runId: last.id, at: last.createdAt, status: last.status } : null,
    migration: migrationOf(home),
    totals: {
      agents: agents.length,
      sessions: sum((a) => a.sessions),
      events: sum((a) => a.events),
      bytes: globalBytes + sum((a) => a.bytes),
    },
    disk: describeStorage(home),
  };
}
