import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { currentProcessOwner, type ProcessOwner } from "../../db/process-owner.js";
import type { JsonValue } from "../json.js";

export type BackupRunStatus = "running" | "succeeded" | "failed" | "interrupted";
const STATUSES: readonly BackupRunStatus[] = ["running", "succeeded", "failed", "interrupted"];
const MAX_LIST_LIMIT = 10_000;

interface BackupRunRow {
  id: string;
  created_at: number;
  archive_path: string;
  status: string;
  manifest_json: string;
  owner_pid: number | null;
  owner_started: number | null;
}

export const BACKUP_RUN_COLUMNS = columnsOf<BackupRunRow>()(
  "id",
  "created_at",
  "archive_path",
  "status",
  "manifest_json",
  "owner_pid",
  "owner_started",
);

export interface BackupRun {
  id: string;
  createdAt: number;
  archivePath: string;
  status: BackupRunStatus;
  /**
   * The archive's manifest once the run succeeded; `{ error }` when it failed; `{ interrupted }`
   * when its process died; `{}` while running.
   */
  manifest: { [key: string]: JsonValue };
  /** The process that ran it; null for runs recorded before owners were. */
  owner: ProcessOwner | null;
}

function fromRow(row: BackupRunRow): BackupRun {
  if (!STATUSES.includes(row.status as BackupRunStatus)) {
    throw new StateError("E_CORRUPT", `backup run ${row.id} has an unknown status ${row.status}`, {
      details: { id: row.id },
    });
  }
  return {
    id: row.id,
    createdAt: row.created_at,
    archivePath: row.archive_path,
    status: row.status as BackupRunStatus,
    manifest: JSON.parse(row.manifest_json) as BackupRun["manifest"],
    owner: row.owner_pid === null ? null : { pid: row.owner_pid, started: row.owner_started },
  };
}

/** `backup_runs` in the global database: one row per backup, `running` until it ends. */
export class BackupRunStore {
  private readonly insert: SqlStatement;
  private readonly update: SqlStatement;
  private readonly selectOne: SqlStatement<BackupRunRow>;
  private readonly selectRecent: SqlStatement<BackupRunRow>;
  private readonly selectAll: SqlStatement<BackupRunRow>;
  private readonly selectRunning: SqlStatement<BackupRunRow>;

  constructor(db: Database) {
    this.insert = db.prepare(
      `INSERT INTO backup_runs (id, created_at, archive_path, status, owner_pid, owner_started)
       VALUES (?, ?, ?, 'running', ?, ?)`,
    );
    this.update = db.prepare(
      "UPDATE backup_runs SET status = ?, manifest_json = ? WHERE id = ? AND status = 'running'",
    );
    this.selectOne = db.prepare("SELECT * FROM backup_runs WHERE id = ?");
    this.selectRecent = db.prepare(
      "SELECT * FROM backup_runs ORDER BY created_at DESC, id DESC LIMIT ?",
    );
    this.selectAll = db.prepare("SELECT * FROM backup_runs ORDER BY created_at DESC, id DESC");
    this.selectRunning = db.prepare(
      "SELECT * FROM backup_runs WHERE status = 'running' ORDER BY created_at, id",
    );
  }

  /** Records a new run owned by `owner`, by default this process: the one that will end it. */
  start(
    id: string,
    createdAt: number,
    archivePath: string,
    owner: ProcessOwner = currentProcessOwner(),
  ): void {
    this.insert.run(id, createdAt, archivePath, owner.pid, owner.started);
  }

  /** Ends a running run; returns false when there is no such running run (already ended). */
  finish(id: string, status: Exclude<BackupRunStatus, "running">, manifest: JsonValue): boolean {
    return this.update.run(status, JSON.stringify(manifest), id).changes === 1;
  }

  get(id: string): BackupRun | undefined {
    const row = this.selectOne.get(id);
    return row ? fromRow(row) : undefined;
  }

  /** The most recent runs first. */
  list(limit = 100): BackupRun[] {
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new TypeError(`Expected a limit from 1 to ${MAX_LIST_LIMIT}, got ${limit}`);
    }
    return this.selectRecent.all(limit).map(fromRow);
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
