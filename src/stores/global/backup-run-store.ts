import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { currentProcessOwner, type ProcessOwner } from "../../db/process-owner.js";
import type { JsonValue } from "../json.js";
import {
  type BackupRun,
  type BackupRunRow,
  type BackupRunStatus,
  backupRunExists,
  checkListLimit,
  checkRunId,
  finishParams,
  fromRow,
  startParams,
} from "./backup-run-rows.js";
import { BACKUP_RUN_SQL } from "./backup-run-sql.js";

export {
  BACKUP_RUN_COLUMNS,
  type BackupRun,
  type BackupRunStatus,
} from "./backup-run-rows.js";

/** `backup_runs` in the global database: one row per backup, `running` until it ends. */
export class BackupRunStore {
  private readonly insert: SqlStatement;
  private readonly update: SqlStatement;
  private readonly selectOne: SqlStatement<BackupRunRow>;
  private readonly selectRecent: SqlStatement<BackupRunRow>;
  private readonly selectAll: SqlStatement<BackupRunRow>;
  private readonly selectRunning: SqlStatement<BackupRunRow>;

  constructor(db: Database) {
    this.insert = db.prepare(BACKUP_RUN_SQL.insert);
    this.update = db.prepare(BACKUP_RUN_SQL.finish);
    this.selectOne = db.prepare(BACKUP_RUN_SQL.select);
    this.selectRecent = db.prepare(BACKUP_RUN_SQL.recent);
    this.selectAll = db.prepare(BACKUP_RUN_SQL.all);
    this.selectRunning = db.prepare(BACKUP_RUN_SQL.running);
  }

  /**
   * Records a new run owned by `owner`, by default this process: the one that will end it.
   * E_CONFLICT when a run with this id exists.
   */
  start(
    id: string,
    createdAt: number,
    archivePath: string,
    owner: ProcessOwner = currentProcessOwner(),
  ): void {
    const params = startParams(id, createdAt, archivePath, owner);
    if (this.insert.get(params) === undefined) throw backupRunExists(params.id);
  }

  /** Ends a running run; returns false when there is no such running run (already ended). */
  finish(id: string, status: Exclude<BackupRunStatus, "running">, manifest: JsonValue): boolean {
    return this.update.get(finishParams(id, status, manifest)) !== undefined;
  }

  get(id: string): BackupRun | undefined {
    const row = this.selectOne.get({ id: checkRunId(id) });
    return row ? fromRow(row) : undefined;
  }

  /** The most recent runs first. */
  list(limit = 100): BackupRun[] {
    return this.selectRecent.all({ limit: checkListLimit(limit) }).map(fromRow);
  }

  /** The runs not ended yet, oldest first: in progress, or left by a process that died. */
  running(): BackupRun[] {
    return this.selectRunning.all().map(fromRow);
  }

  /** Every run, the most recent first. */
  listAll(): BackupRun[] {
    return this.selectAll.all().map(fromRow);
  }
}
