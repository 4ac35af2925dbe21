import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import type { CronSchedule } from "../../schedule/schedule.js";
import { checkStored, decodeJson, isPlainObject } from "../checks.js";
import type { JsonValue } from "../json.js";

export const CRON_RUN_STATUSES = ["ok", "error", "skipped"] as const;
export type CronRunStatus = (typeof CRON_RUN_STATUSES)[number];

export interface CronJobRow {
  job_id: string;
  agent_id: string | null;
  name: string | null;
  enabled: number;
  schedule_json: string;
  payload_json: string;
  definition_json: string;
  next_run_at: number | null;
  last_run_at: number | null;
  last_status: string | null;
  last_error: string | null;
  last_duration_ms: number | null;
  consecutive_errors: number;
  created_at: number;
  updated_at: number;
  claim_owner: string | null;
  claim_id: string | null;
  claim_until: number | null;
}

export interface CronRunLogRow {
  id: number;
  job_id: string;
  ran_at: number;
  status: string;
  duration_ms: number | null;
  error: string | null;
  record_json: string;
}

export const CRON_JOB_COLUMNS = columnsOf<CronJobRow>()(
  "job_id",
  "agent_id",
  "name",
  "enabled",
  "schedule_json",
  "payload_json",
  "definition_json",
  "next_run_at",
  "last_run_at",
  "last_status",
  "last_error",
  "last_duration_ms",
  "consecutive_errors",
  "created_at",
  "updated_at",
  "claim_owner",
  "claim_id",
  "claim_until",
);

export const CRON_RUN_LOG_COLUMNS = columnsOf<CronRunLogRow>()(
  "id",
  "job_id",
  "ran_at",
  "status",
  "duration_ms",
  "error",
  "record_json",
);

/** Runtime state as the legacy job kept it (inline `state`, or the jobs-state sidecar's `state`). */
export interface LegacyCronState {
  nextRunAtMs?: number | null;
  lastRunAtMs?: number | null;
  lastStatus?: string | null;
  lastRunStatus?: string | null;
  lastError?: string | null;
  lastDurationMs?: number | null;
  consecutiveErrors?: number | null;
  [key: string]: JsonValue | undefined;
}

/**
 * A job as given to `add`: the legacy job object (`id`, `name`, `enabled`, `agentId`, `schedule`,
 * `payload`, `delivery`, `sessionTarget` … and any other field), kept verbatim as its definition.
 * A `state` object seeds the runtime state, so an imported job keeps its next run and last status.
 */
export interface CronJobDefinition {
  id: string;
  schedule: CronSchedule;
  name?: string;
  enabled?: boolean;
  agentId?: string | null;
  payload?: JsonValue;
  createdAtMs?: number;
  state?: LegacyCronState;
  [key: string]: unknown;
}

export interface CronJob {
  jobId: string;
  agentId: string | null;
  name: string | null;
  enabled: boolean;
  schedule: CronSchedule;
  payload: JsonValue;
  /** The job object as last given to `add` or `update`. */
  definition: CronJobDefinition;
  /** When `due()` returns the job next; null when it will not run again. */
  nextRunAt: number | null;
  lastRunAt: number | null;
  lastStatus: CronRunStatus | null;
  lastError: string | null;
  lastDurationMs: number | null;
  consecutiveErrors: number;
  createdAt: number;
  updatedAt: number;
}

/** A due job one host claimed to run: no other claimer gets it before `claimExpiresAt`. */
export interface ClaimedCronJob extends CronJob {
  /** What `recordRun` settles the run under (E_CONFLICT once another host took the job over). */
  claimId: string;
  claimOwner: string;
  /** After this, another claimer may take the job over. */
  claimExpiresAt: number;
}

export interface CronRunLog {
  id: number;
  jobId: string;
  ranAt: number;
  status: CronRunStatus;
  durationMs: number | null;
  error: string | null;
  /** Everything else the run reported (summary, session, usage, delivery …), verbatim. */
  record: { [key: string]: JsonValue };
}

export function jobFromRow(row: CronJobRow): CronJob {
  const what = `cron job ${row.job_id}`;
  return {
    jobId: row.job_id,
    agentId: row.agent_id,
    name: row.name,
    enabled: row.enabled === 1,
    schedule: decodeJson<CronSchedule>(`${what} schedule`, row.schedule_json),
    payload: decodeJson(`${what} payload`, row.payload_json),
    definition: decodeJson<CronJobDefinition>(`${what} definition`, row.definition_json),
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at,
    lastStatus:
      row.last_status === null
        ? null
        : checkStored(`${what} last_status`, row.last_status, CRON_RUN_STATUSES),
    lastError: row.last_error,
    lastDurationMs: row.last_duration_ms,
    consecutiveErrors: row.consecutive_errors,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function claimedFromRow(row: CronJobRow): ClaimedCronJob {
  return {
    ...jobFromRow(row),
    claimId: row.claim_id as string,
    claimOwner: row.claim_owner as string,
    claimExpiresAt: row.claim_until as number,
  };
}

export function runFromRow(row: CronRunLogRow): CronRunLog {
  const what = `cron run ${row.id} of job ${row.job_id}`;
  return {
    id: row.id,
    jobId: row.job_id,
    ranAt: row.ran_at,
    status: checkStored(`${what} status`, row.status, CRON_RUN_STATUSES),
    durationMs: row.duration_ms,
    error: row.error,
    record: decodeJson(`${what} record`, row.record_json),
  };
}

/** A legacy status string as a run status; anything else is no status. */
export function runStatusOf(value: unknown): CronRunStatus | null {
  return (CRON_RUN_STATUSES as readonly unknown[]).includes(value)
    ? (value as CronRunStatus)
    : null;
}

export function checkRunStatus(value: unknown): CronRunStatus {
  const status = runStatusOf(value);
  if (!status) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `cron run status must be one of ${CRON_RUN_STATUSES.join(", ")}, got ${JSON.stringify(value)}`,
    );
  }
  return status;
}

export function checkDefinition(value: unknown): CronJobDefinition {
  if (!isPlainObject(value)) {
    throw new StateError("E_INVALID_ARGUMENT", "a cron job must be a plain JSON object");
  }
  return value as CronJobDefinition;
}
