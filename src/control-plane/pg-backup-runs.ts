import type { Pool } from "pg";
import { currentProcessOwner, type ProcessOwner } from "../db/process-owner.js";
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
} from "../stores/global/backup-run-rows.js";
import { BACKUP_RUN_SQL } from "../stores/global/backup-run-sql.js";
import type { JsonValue } from "../stores/json.js";
import type { ControlPlaneBackupRuns } from "./control-plane-ledgers.js";
import { pgStatements, query } from "./pg-statements.js";

// Every write is one statement: the insert claims the id, the finish ends only a running run.
const SQL = pgStatements("backup_runs", BACKUP_RUN_SQL);

/** The backup run ledger on PostgreSQL: `BackupRunStore`'s statements and checks. */
export class PgBackupRuns implements ControlPlaneBackupRuns {
  constructor(private readonly pool: Pool) {}

  async start(
    id: string,
    createdAt: number,
    archivePath: string,
    owner: ProcessOwner = currentProcessOwner(),
  ): Promise<void> {
    const params = startParams(id, createdAt, archivePath, owner);
    const rows = await query(this.pool, SQL.insert, params);
    if (rows.length === 0) throw backupRunExists(params.id);
  }

  async finish(
    id: string,
    status: Exclude<BackupRunStatus, "running">,
    manifest: JsonValue,
  ): Promise<boolean> {
    const rows = await query(this.pool, SQL.finish, finishParams(id, status, manifest));
    return rows.length > 0;
  }

  async get(id: string): Promise<BackupRun | undefined> {
    const [row] = await query<BackupRunRow>(this.pool, SQL.select, { id: checkRunId(id) });
    return row ? fromRow(row) : undefined;
  }

  async list(limit = 100): Promise<BackupRun[]> {
    const params = { limit: checkListLimit(limit) };
    return (await query<BackupRunRow>(this.pool, SQL.recent, params)).map(fromRow);
  }

  async running(): Promise<BackupRun[]> {
    return (await query<BackupRunRow>(this.pool, SQL.running, {})).map(fromRow);
  }

  async listAll(): Promise<BackupRun[]> {
    return (await query<BackupRunRow>(this.pool, SQL.all, {})).map(fromRow);
  }
}
