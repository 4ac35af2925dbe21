import { columnsOf } from "../../db/columns.js";
import { isStateError, StateError } from "../../db/errors.js";
import type { ProcessOwner } from "../../db/process-owner.js";
import { checkInteger, checkText, optionalText, optionalTime } from "../checks.js";
import { type JsonValue, toJson } from "../json.js";

export type MigrationRunStatus = "running" | "succeeded" | "partial" | "failed" | "interrupted";
export type MigrationSourceStatus = "imported" | "skipped" | "warning" | "failed";
export type JsonObject = { [key: string]: JsonValue };

const END_STATUSES = ["succeeded", "partial", "failed", "interrupted"] as const;
const SOURCE_STATUSES: readonly MigrationSourceStatus[] = [
  "imported",
  "skipped",
  "warning",
  "failed",
];
const MAX_RUN_LIST = 10_000;
/** Source keys and home-relative paths: longer than names, shorter than anything abusive. */
export const MAX_SOURCE_TEXT = 4096;

export interface MigrationRunRow {
  id: string;
  started_at: number;
  finished_at: number | null;
  status: MigrationRunStatus;
  report_json: string;
  owner_pid: number | null;
  owner_started: number | null;
}

export interface MigrationSourceRow {
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

/** A source to record: `removedSource` defaults to false. */
export type NewMigrationSource = Omit<MigrationSource, "removedSource"> & {
  removedSource?: boolean;
};

export function runFromRow(row: MigrationRunRow): MigrationRun {
  return {
    id: row.id,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    status: row.status,
    report: JSON.parse(row.report_json) as JsonObject,
    owner: row.owner_pid === null ? null : { pid: row.owner_pid, started: row.owner_started },
  };
}

export function sourceFromRow(row: MigrationSourceRow): MigrationSource {
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

export function checkMigrationRunId(id: unknown): string {
  return checkText("migration run id", id, 256);
}

export function startRunParams(id: unknown, report: unknown, owner: ProcessOwner, now: number) {
  const runId = checkMigrationRunId(id);
  return {
    id: runId,
    startedAt: now,
    report: toJson(report, "migration report"),
    ownerPid: owner.pid,
    ownerStarted: owner.started,
  };
}

export function finishRunParams(id: unknown, status: unknown, report: unknown, now: number) {
  const runId = checkMigrationRunId(id);
  if (!(END_STATUSES as readonly unknown[]).includes(status)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `migration run ${runId} can end as ${END_STATUSES.join(", ")}, not ${String(status)}`,
    );
  }
  const end = status as (typeof END_STATUSES)[number];
  return { id: runId, status: end, report: toJson(report, "migration report"), finishedAt: now };
}

export function runListLimit(limit: unknown): number {
  return checkInteger("limit", limit, 1, MAX_RUN_LIST);
}

export function noMigrationRun(id: string): StateError {
  return new StateError("E_NOT_FOUND", `no migration run ${id}`, { details: { runId: id } });
}

export function migrationRunExists(id: string): StateError {
  return new StateError("E_CONFLICT", `migration run ${id} already exists`, {
    details: { runId: id },
  });
}

/**
 * What a write naming a run gets back from the engine: its only constraint left unchecked is the
 * run's foreign key, so a constraint error means the run is not in the ledger, said the same on
 * either backend.
 */
export function unknownRun(error: unknown, runId: string | null): unknown {
  if (runId === null || !isStateError(error, "E_CONSTRAINT")) return error;
  return new StateError("E_CONSTRAINT", `migration run ${runId} is not in the ledger`, {
    cause: error,
    details: { runId },
  });
}

export function checkSourceText(what: string, value: unknown): string {
  return checkText(what, value, MAX_SOURCE_TEXT);
}

/** The upsert's parameters for a source, every field checked before anything is written. */
export function sourceParams(source: NewMigrationSource) {
  const key = checkSourceText("migration source key", source?.sourceKey);
  const text = (name: keyof NewMigrationSource) =>
    checkSourceText(`migration source ${key} ${name}`, source[name]);
  const count = (name: keyof NewMigrationSource) =>
    checkInteger(`migration source ${key} ${name}`, source[name], 0, Number.MAX_SAFE_INTEGER);
  if (!SOURCE_STATUSES.includes(source.status)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `migration source ${key} status must be one of ${SOURCE_STATUSES.join(", ")}, got ${String(source.status)}`,
    );
  }
  return {
    sourceKey: key,
    kind: text("kind"),
    path: text("path"),
    targetTable: text("targetTable"),
    sha256: text("sha256"),
    sizeBytes: count("sizeBytes"),
    recordCount: count("recordCount"),
    lastRunId: optionalText(`migration source ${key} lastRunId`, source.lastRunId, 256),
    status: source.status,
    importedAt: optionalTime(`migration source ${key} importedAt`, source.importedAt),
    removedSource: source.removedSource ? 1 : 0,
    report: toJson(source.report, `migration report of ${source.path}`),
  };
}
