import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { currentProcessOwner } from "../../db/process-owner.js";
import { type Clock, checkOptions } from "../checks.js";
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
} from "./migration-ledger-rows.js";
import { MIGRATION_SQL } from "./migration-ledger-sql.js";

export {
  MIGRATION_RUN_COLUMNS,
  MIGRATION_SOURCE_COLUMNS,
  type MigrationRun,
  type MigrationRunStatus,
  type MigrationSource,
  type MigrationSourceStatus,
  type NewMigrationSource,
} from "./migration-ledger-rows.js";

/** The audit trail of legacy migrations: one row per run, one per source file. */
export class MigrationLedgerStore {
  private readonly clock: Clock;
  private readonly insertRun: SqlStatement<MigrationRunRow>;
  private readonly updateRun: SqlStatement<MigrationRunRow>;
  private readonly selectRun: SqlStatement<MigrationRunRow>;
  private readonly selectRuns: SqlStatement<MigrationRunRow>;
  private readonly selectRunning: SqlStatement<MigrationRunRow>;
  private readonly upsertSource: SqlStatement;
  private readonly selectSource: SqlStatement<MigrationSourceRow>;
  private readonly selectRunSources: SqlStatement<MigrationSourceRow>;
  private readonly selectAtPath: SqlStatement<MigrationSourceRow>;
  private readonly setRemoved: SqlStatement;

  constructor(db: Database, options: { clock?: Clock } = {}) {
    this.clock = checkOptions(options, ["clock"], "MigrationLedgerStore").clock ?? Date.now;
    this.insertRun = db.prepare(MIGRATION_SQL.insertRun);
    this.updateRun = db.prepare(MIGRATION_SQL.finishRun);
    this.selectRun = db.prepare(MIGRATION_SQL.selectRun);
    this.selectRuns = db.prepare(MIGRATION_SQL.recentRuns);
    this.selectRunning = db.prepare(MIGRATION_SQL.runningRuns);
    this.upsertSource = db.prepare(MIGRATION_SQL.upsertSource);
    this.selectSource = db.prepare(MIGRATION_SQL.selectSource);
    this.selectRunSources = db.prepare(MIGRATION_SQL.sourcesOfRun);
    this.selectAtPath = db.prepare(MIGRATION_SQL.sourcesAtPath);
    this.setRemoved = db.prepare(MIGRATION_SQL.markRemoved);
  }

  /** Records a new run owned by this process, which is the one to end it (E_CONFLICT if its id exists). */
  startRun(id: string, report: JsonObject = {}): MigrationRun {
    const params = startRunParams(id, report, currentProcessOwner(), this.clock());
    const row = this.insertRun.get(params);
    if (!row) throw migrationRunExists(params.id);
    return runFromRow(row);
  }

  /** Ends a run (E_NOT_FOUND without it), stamping its finish time. */
  finishRun(
    id: string,
    status: Exclude<MigrationRunStatus, "running">,
    report: JsonObject,
  ): MigrationRun {
    const params = finishRunParams(id, status, report, this.clock());
    const row = this.updateRun.get(params);
    if (!row) throw noMigrationRun(params.id);
    return runFromRow(row);
  }

  getRun(id: string): MigrationRun {
    const runId = checkMigrationRunId(id);
    const row = this.selectRun.get({ id: runId });
    if (!row) throw noMigrationRun(runId);
    return runFromRow(row);
  }

  /** The most recent runs first. */
  listRuns(limit = 50): MigrationRun[] {
    return this.selectRuns.all({ limit: runListLimit(limit) }).map(runFromRow);
  }

  /** The runs not ended yet, oldest first: in progress, or left by a process that died. */
  runningRuns(): MigrationRun[] {
    return this.selectRunning.all().map(runFromRow);
  }

  findSource(sourceKey: string): MigrationSource | undefined {
    const row = this.selectSource.get({
      sourceKey: checkSourceText("migration source key", sourceKey),
    });
    return row ? sourceFromRow(row) : undefined;
  }

  /** Records a source, or its new outcome (E_CONSTRAINT when `lastRunId` is not in the ledger). */
  recordSource(source: NewMigrationSource): void {
    const params = sourceParams(source);
    try {
      this.upsertSource.run(params);
    } catch (error) {
      throw unknownRun(error, params.lastRunId);
    }
  }

  /** Every recorded version of the file at `path` (home-relative), latest import first. */
  sourcesAtPath(path: string): MigrationSource[] {
    const checked = checkSourceText("migration source path", path);
    return this.selectAtPath.all({ path: checked }).map(sourceFromRow);
  }

  markRemoved(sourceKey: string): void {
    this.setRemoved.run({ sourceKey: checkSourceText("migration source key", sourceKey) });
  }

  /** The sources a run recorded last, by path. */
  sourcesOfRun(runId: string): MigrationSource[] {
    return this.selectRunSources.all({ runId: checkMigrationRunId(runId) }).map(sourceFromRow);
  }
}
