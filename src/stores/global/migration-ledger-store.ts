import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { currentProcessOwner, type ProcessOwner } from "../../db/process-owner.js";
import { type JsonValue, toJson } from "../json.js";

export type MigrationRunStatus = "running" | "succeeded" | "partial" | "failed" | "interrupted";
export type MigrationSourceStatus = "imported" | "skipped" | "warning" | "failed";
type JsonObject = { [key: string]: JsonValue };

interface MigrationRunRow {
  id: string;
  started_at: number;
  finished_at: number | null;
  status: MigrationRunStatus;
  report_json: string;
  owner_pid: number | null;
  owner_started: number | null;
}

interface MigrationSourceRow {
  source_key: string;
  migration_kind: string;
  source_path: string;
  target_table: string;
  source_sha256: string;
  source_size_bytes: number;
  source_record_count: number;
  last_run_id: string | null;
  status: MigrationSourceStatus;
  imported_at: number | null;
  removed_source: number;
  report_json: string;
}

export const MIGRATION_RUN_COLUMNS = columnsOf<MigrationRunRow>()(
  "id",
  "started_at",
  "finished_at",
  "status",
  "report_json",
  "owner_pid",
  "owner_started",
);
export const MIGRATION_SOURCE_COLUMNS = columnsOf<MigrationSourceRow>()(
  "source_key",
  "migration_kind",
  "source_path",
  "target_table",
  "source_sha256",
  "source_size_bytes",
  "source_record_count",
  "last_run_id",
  "status",
  "imported_at",
  "removed_source",
  "report_json",
);

export interface MigrationRun {
  id: string;
  startedAt: number;
  finishedAt: number | null;
  status: MigrationRunStatus;
  report: JsonObject;
  /** The process that ran it; null for runs recorded before owners were. */
  owner: ProcessOwner | null;
}

export interface MigrationSource {
  sourceKey: string;
  kind: string;
  path: string;
  targetTable: string;
  sha256: string;
  sizeBytes: number;
  recordCount: number;
  lastRunId: string | null;
  status: MigrationSourceStatus;
  importedAt: number | null;
  removedSource: boolean;
  report: JsonObject;
}

function runFromRow(row: MigrationRunRow): MigrationRun {
  return {
    id: row.id,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    status: row.status,
    report: JSON.parse(row.report_json) as JsonObject,
    owner: row.owner_pid === null ? null : { pid: row.owner_pid, started: row.owner_started },
  };
}

function sourceFromRow(row: MigrationSourceRow): MigrationSource {
  return {
    sourceKey: row.source_key,
    kind: row.migration_kind,
    path: row.source_path,
    targetTable: row.target_table,
    sha256: row.source_sha256,
    sizeBytes: row.source_size_bytes,
    recordCount: row.source_record_count,
    lastRunId: row.last_run_id,
    status: row.status,
    importedAt: row.imported_at,
    removedSource: row.removed_source === 1,
    report: JSON.parse(row.report_json) as JsonObject,
  };
}

/** The audit trail of legacy migrations: one row per run, one per source file. */
export class MigrationLedgerStore {
  private readonly insertRun: SqlStatement;
  private readonly updateRun: SqlStatement;
  private readonly selectRun: SqlStatement<MigrationRunRow>;
  private readonly selectRuns: SqlStatement<MigrationRunRow>;
  private readonly selectRunning: SqlStatement<MigrationRunRow>;
  private readonly upsertSource: SqlStatement;
  private readonly selectSource: SqlStatement<MigrationSourceRow>;
  private readonly selectRunSources: SqlStatement<MigrationSourceRow>;
  private readonly selectAtPath: SqlStatement<MigrationSourceRow>;
  private readonly setRemoved: SqlStatement;

  constructor(db: Database) {
    this.insertRun = db.prepare(
      `INSERT INTO migration_runs (id, started_at, status, report_json, owner_pid, owner_started)
       VALUES (?, ?, 'running', ?, ?, ?)`,
    );
    this.updateRun = db.prepare(
      "UPDATE migration_runs SET finished_at = ?, status = ?, report_json = ? WHERE id = ?",
    );
    this.selectRun = db.prepare("SELECT * FROM migration_runs WHERE id = ?");
    this.selectRuns = db.prepare(
      "SELECT * FROM migration_runs ORDER BY started_at DESC, id DESC LIMIT ?",
    );
    this.selectRunning = db.prepare(
      "SELECT * FROM migration_runs WHERE status = 'running' ORDER BY started_at, id",
    );
    this.upsertSource = db.prepare(
      `INSERT INTO migration_sources (source_key, migration_kind, source_path, target_table, source_sha256,
         source_size_bytes, source_record_count, last_run_id, status, imported_at, removed_source, report_json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (source_key) DO UPDATE SET last_run_id = excluded.last_run_id, status = excluded.status,
         imported_at = excluded.imported_at, removed_source = excluded.removed_source,
         source_record_count = excluded.source_record_count, report_json = excluded.report_json`,
    );
    this.selectSource = db.prepare("SELECT * FROM migration_sources WHERE source_key = ?");
    this.selectRunSources = db.prepare(
      "SELECT * FROM migration_sources WHERE last_run_id = ? ORDER BY source_path",
    );
    this.selectAtPath = db.prepare(
      "SELECT * FROM migration_sources WHERE source_path = ? ORDER BY imported_at DESC, source_key",
    );
    this.setRemoved = db.prepare(
      "UPDATE migration_sources SET removed_source = 1 WHERE source_key = ?",
    );
  }

  /** Records a new run owned by this process, which is the one to end it. */
  startRun(id: string, report: JsonObject = {}): MigrationRun {
    const owner = currentProcessOwner();
    this.insertRun.run(
      id,
      Date.now(),
      toJson(report, "migration report"),
      owner.pid,
      owner.started,
    );
    return this.getRun(id);
  }

  finishRun(
    id: string,
    status: Exclude<MigrationRunStatus, "running">,
    report: JsonObject,
  ): MigrationRun {
    this.updateRun.run(Date.now(), status, toJson(report, "migration report"), id);
    return this.getRun(id);
  }

  getRun(id: string): MigrationRun {
    const row = this.selectRun.get(id);
    if (!row)
      throw new StateError("E_NOT_FOUND", `no migration run ${id}`, { details: { runId: id } });
    return runFromRow(row);
  }

  listRuns(limit = 50): MigrationRun[] {
    return this.selectRuns.all(limit).map(runFromRow);
  }

  /** The runs not ended yet, oldest first: in progress, or left by a process that died. */
  runningRuns(): MigrationRun[] {
    return this.selectRunning.all().map(runFromRow);
  }

  findSource(sourceKey: string): MigrationSource | undefined {
    const row = this.selectSource.get(sourceKey);
    return row ? sourceFromRow(row) : undefined;
  }

  recordSource(source: Omit<MigrationSource, "removedSource"> & { removedSource?: boolean }): void {
    this.upsertSource.run(
      source.sourceKey,
      source.kind,
      source.path,
      source.targetTable,
      source.sha256,
      source.sizeBytes,
      source.recordCount,
      source.lastRunId,
      source.status,
      source.importedAt,
      source.removedSource ? 1 : 0,
      toJson(source.report, `migration report of ${source.path}`),
    );
  }

  /** Every recorded version of the file at `path` (home-relative), latest import first. */
  sourcesAtPath(path: string): MigrationSource[] {
    return this.selectAtPath.all(path).map(sourceFromRow);
  }

  markRemoved(sourceKey: string): void {
    this.setRemoved.run(sourceKey);
  }

  sourcesOfRun(runId: string): MigrationSource[] {
    return this.selectRunSources.all(runId).map(sourceFromRow);
  }
}
