import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import type { ProcessOwner } from "../../db/process-owner.js";
import { checkInteger, checkText, checkTime } from "../checks.js";
import { type JsonValue, toJson } from "../json.js";

export type BackupRunStatus = "running" | "succeeded" | "failed" | "interrupted";
const STATUSES: readonly BackupRunStatus[] = ["running", "succeeded", "failed", "interrupted"];
const MAX_LIST_LIMIT = 10_000;
/** Archive paths are absolute paths chosen by the operator: longer than names and keys. */
const MAX_PATH_LENGTH = 4096;

export interface BackupRunRow {
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

export function fromRow(row: BackupRunRow): BackupRun {
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

/** The insert's parameters, every argument checked before anything is written. */
export function startParams(
  id: unknown,
  createdAt: unknown,
  archivePath: unknown,
  owner: ProcessOwner,
) {
  const runId = checkRunId(id);
  return {
    id: runId,
    createdAt: checkTime(`backup run ${runId} createdAt`, createdAt),
    archivePath: checkText(`backup run ${runId} archivePath`, archivePath, MAX_PATH_LENGTH),
    ownerPid: checkInteger("backup run owner pid", owner.pid, 1, 2 ** 31 - 1),
    ownerStarted:
      owner.started === null
        ? null
        : checkInteger("backup run owner start", owner.started, 0, Number.MAX_SAFE_INTEGER),
  };
}

/** The update's parameters: an end status (never back to running) and the manifest's JSON. */
export function finishParams(id: unknown, status: unknown, manifest: unknown) {
  const runId = checkRunId(id);
  if (!STATUSES.includes(status as BackupRunStatus) || status === "running") {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `backup run ${runId} can end as succeeded, failed or interrupted, not ${String(status)}`,
    );
  }
  const end = status as Exclude<BackupRunStatus, "running">;
  return { id: runId, status: end, manifest: toJson(manifest, `backup run ${runId} manifest`) };
}

export function checkRunId(id: unknown): string {
  return checkText("backup run id", id, 256);
}

export function backupRunExists(id: string): StateError {
  return new StateError("E_CONFLICT", `backup run ${id} already exists`, { details: { id } });
}

export function checkListLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new TypeError(`Expected a limit from 1 to ${MAX_LIST_LIMIT}, got ${limit}`);
  }
  return limit;
}
