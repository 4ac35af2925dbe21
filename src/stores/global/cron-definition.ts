import { StateError } from "../../db/errors.js";
import { nextRunAt, type ParsedSchedule, parseSchedule } from "../../schedule/schedule.js";
import {
  checkInteger,
  checkOptions,
  checkText,
  encodeJson,
  encodeRecord,
  errorText,
  isPlainObject,
  optionalText,
  optionalTime,
} from "../checks.js";
import {
  type CronJob,
  type CronJobDefinition,
  type CronRunStatus,
  checkDefinition,
  checkRunStatus,
  runStatusOf,
} from "./cron-rows.js";

/** Whole job objects carry prompts; a megabyte is far above any real one. */
export const MAX_CRON_DEFINITION_BYTES = 1024 * 1024;

/** Either fields to shallow-merge over the definition, or a function from the current one. */
export type CronJobPatch =
  | Partial<CronJobDefinition>
  | ((current: CronJobDefinition) => CronJobDefinition);

/** One finished run, as the scheduler reports it. */
export interface CronRunInput {
  status: CronRunStatus;
  /** When the run started. */
  ranAt: number;
  durationMs?: number;
  error?: string;
  /** Anything else worth keeping (summary, sessionId, usage, delivery …), stored verbatim. */
  record?: { [key: string]: unknown };
}

export interface Prepared {
  job: CronJobDefinition;
  schedule: ParsedSchedule;
  values: Record<string, string | number | null> & { job_id: string; created_at: number };
}

/** Validates a job definition and the column values it determines. */
export function definitionValues(definition: unknown, now: number, timeZone: string): Prepared {
  const raw = checkDefinition(definition);
  const job = {
    ...raw,
    id: checkText("cron job id", raw.id ?? raw.jobId, 256),
  } as CronJobDefinition;
  const schedule = parseSchedule(job.schedule, timeZone);
  if (job.enabled !== undefined && typeof job.enabled !== "boolean") {
    throw new StateError("E_INVALID_ARGUMENT", `cron job ${job.id}: enabled must be a boolean`);
  }
  const what = `cron job ${job.id}`;
  const values = {
    job_id: job.id,
    agent_id: optionalText(`${what} agentId`, job.agentId, 256),
    name: typeof job.name === "string" ? job.name : null,
    enabled: job.enabled === false ? 0 : 1,
    schedule_json: encodeJson(`${what} schedule`, job.schedule, MAX_CRON_DEFINITION_BYTES),
    payload_json: encodeJson(`${what} payload`, job.payload ?? null, MAX_CRON_DEFINITION_BYTES),
    definition_json: encodeRecord(`${what} definition`, job, MAX_CRON_DEFINITION_BYTES),
    created_at: optionalTime(`${what} createdAtMs`, job.createdAtMs) ?? now,
    updated_at: now,
  };
  return { job, schedule, values };
}

/** The row values `add` inserts: the definition's, and the runtime state it seeds. */
export function addedValues(definition: unknown, now: number, timeZone: string) {
  const { job, schedule, values } = definitionValues(definition, now, timeZone);
  return { ...values, ...seededState(job, schedule, now, values.created_at) };
}

export function jobExistsError(jobId: string): StateError {
  return new StateError("E_CONFLICT", `cron job ${jobId} already exists`, { details: { jobId } });
}

/**
 * The runtime columns of a new job: from its legacy `state` where present (an imported job keeps
 * its next run and last status), else a first run computed from now.
 */
export function seededState(
  job: CronJobDefinition,
  schedule: ParsedSchedule,
  now: number,
  createdAt: number,
) {
  const state = isPlainObject(job.state) ? job.state : {};
  const lastRunAt = optionalTime("state.lastRunAtMs", state.lastRunAtMs);
  const computed =
    job.enabled === false
      ? null
      : nextRunAt(schedule, now, { jobId: job.id, createdAt, lastRunAt });
  const errors = state.consecutiveErrors;
  return {
    next_run_at: optionalTime("state.nextRunAtMs", state.nextRunAtMs) ?? computed,
    last_run_at: lastRunAt,
    last_status: runStatusOf(state.lastRunStatus ?? state.lastStatus),
    last_error: typeof state.lastError === "string" ? state.lastError : null,
    last_duration_ms: optionalTime("state.lastDurationMs", state.lastDurationMs),
    consecutive_errors: typeof errors === "number" ? Math.max(0, Math.trunc(errors)) : 0,
  };
}

/** The definition after a patch; a job cannot change its id. */
export function patchedDefinition(
  current: CronJobDefinition,
  patch: CronJobPatch,
  id: string,
): CronJobDefinition {
  const next =
    typeof patch === "function"
      ? patch(structuredClone(current))
      : { ...current, ...checkDefinition(patch) };
  if ((next.id ?? id) !== id) {
    throw new StateError("E_INVALID_ARGUMENT", `cron job ${id} cannot change its id`);
  }
  return { ...next, id };
}

export function checkRun(run: CronRunInput, where = "CronStore.recordRun") {
  const {
    status,
    ranAt,
    durationMs,
    error,
    record = {},
  } = checkOptions(run, ["status", "ranAt", "durationMs", "error", "record"], where);
  return {
    status: checkRunStatus(status),
    ranAt: checkInteger("ranAt", ranAt, 0, Number.MAX_SAFE_INTEGER),
    durationMs:
      durationMs === undefined
        ? undefined
        : checkInteger("durationMs", durationMs, 0, Number.MAX_SAFE_INTEGER),
    error: error === undefined ? undefined : errorText(error),
    record,
  };
}

/**
 * The row values `update` writes. When the schedule or `enabled` changes, the next run is computed
 * afresh from now; otherwise the runtime state is kept.
 */
export function updatedValues(
  current: CronJob,
  patch: CronJobPatch,
  now: number,
  timeZone: string,
) {
  const id = current.jobId;
  const next = patchedDefinition(current.definition, patch, id);
  const { schedule, values } = definitionValues(next, now, timeZone);
  const timingChanged =
    values.schedule_json !== JSON.stringify(current.schedule) ||
    (values.enabled === 1) !== current.enabled;
  const context = { jobId: id, createdAt: current.createdAt, lastRunAt: current.lastRunAt };
  const nextRun = !timingChanged
    ? current.nextRunAt
    : values.enabled === 1
      ? nextRunAt(schedule, now, context)
      : null;
  return { ...values, next_run_at: nextRun, updated_at: now };
}

/** The runtime state `recordRun` writes: the next run is computed from when the run finished. */
export function runStateValues(
  job: CronJob,
  run: ReturnType<typeof checkRun>,
  now: number,
  timeZone: string,
) {
  const schedule = parseSchedule(job.schedule, timeZone);
  const finishedAt = run.ranAt + (run.durationMs ?? 0);
  const context = { jobId: job.jobId, createdAt: job.createdAt, lastRunAt: run.ranAt };
  return {
    jobId: job.jobId,
    next: job.enabled ? nextRunAt(schedule, finishedAt, context) : null,
    now,
    status: run.status,
    ranAt: run.ranAt,
    error: run.error ?? null,
    durationMs: run.durationMs ?? null,
  };
}
