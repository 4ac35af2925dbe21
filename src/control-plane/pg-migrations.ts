import type { Pool } from "pg";
import { currentProcessOwner } from "../db/process-owner.js";
import type { Clock } from "../stores/checks.js";
import {
  checkMigrationRunId,
  checkSourceText,
  finishRunParams,
  type JsonObject,
  type MigrationRun,
  type MigrationRunRow,
  type MigrationRunStatus,
  type MigrationSource,
  type MigrationSourceRow,
  migrationRunExists,
  type NewMigrationSource,
  noMigrationRun,
  runFromRow,
  runListLimit,
  sourceFromRow,
  sourceParams,
  startRunParams,
  unknownRun,
} from "../stores/global/migration-ledger-rows.js";
import { MIGRATION_SQL } from "../stores/global/migration-ledger-sql.js";
import type {
  ControlPlaneMigrationQuarantine,
  ControlPlaneMigrationRuns,
  ControlPlaneMigrationSources,
  ControlPlaneMigrations,
} from "./control-plane-ledgers.js";
import { PgMigrationQuarantine } from "./pg-migration-quarantine.js";
import { pgStatements, query } from "./pg-statements.js";

// Every write is one statement returning what it wrote: a finish reads back its own update, never
// another host's later one.
const SQL = pgStatements("migrations", MIGRATION_SQL);

/** Migration runs on PostgreSQL: `MigrationLedgerStore`'s statements and checks. */
class PgMigrationRuns implements ControlPlaneMigrationRuns {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async start(id: string, report: JsonObject = {}): Promise<MigrationRun> {
    const params = startRunParams(id, report, currentProcessOwner(), this.clock());
    const [row] = await query<MigrationRunRow>(this.pool, SQL.insertRun, params);
    if (!row) throw migrationRunExists(params.id);
    return runFromRow(row);
  }

  async finish(
    id: string,
    status: Exclude<MigrationRunStatus, "running">,
    report: JsonObject,
  ): Promise<MigrationRun> {
    const params = finishRunParams(id, status, report, this.clock());
    const [row] = await query<MigrationRunRow>(this.pool, SQL.finishRun, params);
    if (!row) throw noMigrationRun(params.id);
    return runFromRow(row);
  }

  async get(id: string): Promise<MigrationRun> {
    const runId = checkMigrationRunId(id);
    const [row] = await query<MigrationRunRow>(this.pool, SQL.selectRun, { id: runId });
    if (!row) throw noMigrationRun(runId);
    return runFromRow(row);
  }

  async list(limit = 50): Promise<MigrationRun[]> {
    const params = { limit: runListLimit(limit) };
    return (await query<MigrationRunRow>(this.pool, SQL.recentRuns, params)).map(runFromRow);
  }

  async running(): Promise<MigrationRun[]> {
    return (await query<MigrationRunRow>(this.pool, SQL.runningRuns, {})).map(runFromRow);
  }
}

/** Migrated sources on PostgreSQL: `MigrationLedgerStore`'s statements and checks. */
class PgMigrationSources implements ControlPlaneMigrationSources {
  constructor(private readonly pool: Pool) {}

  async find(sourceKey: string): Promise<MigrationSource | undefined> {
    const params = { sourceKey: checkSourceText("migration source key", sourceKey) };
    const [row] = await query<MigrationSourceRow>(this.pool, SQL.selectSource, params);
    return row ? sourceFromRow(row) : undefined;
  }

  async record(source: NewMigrationSource): Promise<void> {
    const params = sourceParams(source);
    try {
      await query(this.pool, SQL.upsertSource, params);
    } catch (error) {
      throw unknownRun(error, params.lastRunId);
    }
  }

  async atPath(path: string): Promise<MigrationSource[]> {
    const params = { path: checkSourceText("migration source path", path) };
    return (await query<MigrationSourceRow>(this.pool, SQL.sourcesAtPath, params)).map(
      sourceFromRow,
    );
  }

  async markRemoved(sourceKey: string): Promise<void> {
    const params = { sourceKey: checkSourceText("migration source key", sourceKey) };
    await query(this.pool, SQL.markRemoved, params);
  }

  async ofRun(runId: string): Promise<MigrationSource[]> {
    const params = { runId: checkMigrationRunId(runId) };
    return (await query<MigrationSourceRow>(this.pool, SQL.sourcesOfRun, params)).map(
      sourceFromRow,
    );
  }
}

/** The migration ledger on PostgreSQL. */
export function pgMigrations(pool: Pool, clock: Clock): ControlPlaneMigrations {
  const quarantine: ControlPlaneMigrationQuarantine = new PgMigrationQuarantine(pool, clock);
  return Object.freeze({
    runs: new PgMigrationRuns(pool, clock),
    sources: new PgMigrationSources(pool),
    quarantine,
  });
}
