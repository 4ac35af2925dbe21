import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { parseSchedule } from "../../schedule/schedule.js";
import { hostTimeZone } from "../../schedule/time-zone.js";
import {
  type Clock,
  checkInteger,
  checkLimit,
  checkOptions,
  checkText,
  isPlainObject,
  optionalText,
} from "../checks.js";
import {
  type CronClaimOptions,
  type CronRecordOptions,
  checkClaimHeld,
  checkRecordOptions,
  claimParams,
} from "./cron-claims.js";
import {
  addedValues,
  type CronJobPatch,
  type CronRunInput,
  checkRun,
  jobExistsError,
  runStateValues,
  seededState,
  updatedValues,
} from "./cron-definition.js";
import {
  type ClaimedCronJob,
  type CronJob,
  type CronJobDefinition,
  type CronJobRow,
  type CronRunLog,
  claimedFromRow,
  jobFromRow,
  type LegacyCronState,
} from "./cron-rows.js";
import { CronRunLogStore, runLogValues } from "./cron-run-log.js";
import { CRON_SQL, cronClaimSql } from "./cron-sql.js";

export type { CronClaimOptions, CronRecordOptions } from "./cron-claims.js";
export type { CronJobPatch, CronRunInput } from "./cron-definition.js";
export { MAX_CRON_DEFINITION_BYTES } from "./cron-definition.js";
export type {
  ClaimedCronJob,
  CronJob,
  CronJobDefinition,
  CronRunLog,
  CronRunStatus,
  LegacyCronState,
} from "./cron-rows.js";

export interface CronStoreOptions {
  clock?: Clock;
  /** Zone of cron schedules without `tz` (default: the host's, as the legacy scheduler). */
  defaultTimeZone?: string;
  /** Run-log rows kept per job; older ones are deleted as new ones arrive (default 2000). */
  keepRunsPerJob?: number;
}

export interface CronListOptions {
  agentId?: string;
  enabled?: boolean;
  /** Keyset pagination by job id. */
  after?: string;
  limit?: number;
}

/** The parameters of `CRON_SQL.list`, checked. */
export function listParams(options: CronListOptions) {
  const {
    agentId,
    enabled,
    after = "",
    limit,
  } = checkOptions(options, ["agentId", "enabled", "after", "limit"], "CronStore.list");
  if (enabled !== undefined && typeof enabled !== "boolean")
    throw new TypeError("Expected enabled to be a boolean");
  return {
    after: after === "" ? after : checkText("after", after),
    agentId: optionalText("agentId", agentId, 256),
    enabled: enabled === undefined ? null : Number(enabled),
    limit: checkLimit(limit),
  };
}

/** Checked `CronStoreOptions`, defaults filled in (the zone stays unset: looked up on first use). */
export function cronSettings(options: CronStoreOptions, where: string) {
  const checked = checkOptions(options, ["clock", "defaultTimeZone", "keepRunsPerJob"], where);
  return {
    clock: checked.clock ?? Date.now,
    defaultTimeZone: checked.defaultTimeZone as string | undefined,
    keepRunsPerJob: checkInteger("keepRunsPerJob", checked.keepRunsPerJob ?? 2000, 1, 1_000_000),
  };
}

// `due` keeps SQLite's insertion order (rowid) among jobs due at the same millisecond.
const DUE_SQL = `SELECT * FROM cron_jobs WHERE enabled = 1 AND next_run_at IS NOT NULL
    AND next_run_at <= ? ORDER BY next_run_at, rowid LIMIT ?`;

/**
 * Cron jobs in the global database: the definition, the schedule, and the runtime state the
 * scheduler updates after every run (`next_run_at` drives `due`). Run history is `cron_run_logs`.
 */
export class CronStore {
  /** Run history: `logs.append` imports past runs, `logs.prune` applies retention to all jobs. */
  readonly logs: CronRunLogStore;
  private readonly clock: Clock;
  /** Set by the caller, or the host's zone looked up on first use (ICU's first call costs ~15 ms). */
  private zone: string | undefined;
  private readonly selectOne: SqlStatement<CronJobRow>;
  private readonly insertJob: SqlStatement<CronJobRow>;
  private readonly replaceDefinition: SqlStatement<CronJobRow>;
  private readonly updateState: SqlStatement<CronJobRow>;
  private readonly restore: SqlStatement<CronJobRow>;
  private readonly deleteJob: SqlStatement;
  private readonly selectDue: SqlStatement<CronJobRow>;
  private readonly selectNextDue: SqlStatement<{ at: number | null }>;
  private readonly selectNextClaimable: SqlStatement<{ at: number | null }>;
  private readonly listPage: SqlStatement<CronJobRow>;
  private readonly claim: SqlStatement<CronJobRow>;

  constructor(
    private readonly db: Database,
    options: CronStoreOptions = {},
  ) {
    const checked = cronSettings(options, "CronStore");
    this.clock = checked.clock;
    this.zone = checked.defaultTimeZone;
    this.logs = new CronRunLogStore(db, checked.keepRunsPerJob);
    this.selectOne = db.prepare(CRON_SQL.select);
    this.insertJob = db.prepare(CRON_SQL.insert);
    this.replaceDefinition = db.prepare(CRON_SQL.replaceDefinition);
    this.updateState = db.prepare(CRON_SQL.updateState);
    this.restore = db.prepare(CRON_SQL.restoreState);
    this.deleteJob = db.prepare(CRON_SQL.delete);
    this.selectDue = db.prepare(DUE_SQL);
    this.selectNextDue = db.prepare(CRON_SQL.nextDue);
    this.selectNextClaimable = db.prepare(CRON_SQL.nextClaimable);
    this.listPage = db.prepare(CRON_SQL.list);
    this.claim = db.prepare(cronClaimSql(""));
  }

  private get timeZone(): string {
    this.zone ??= hostTimeZone();
    return this.zone;
  }

  /** Adds a job (E_CONFLICT if its id exists). Its `state`, if any, seeds the runtime columns. */
  add(definition: CronJobDefinition): CronJob {
    const values = addedValues(definition, this.clock(), this.timeZone);
    const row = this.insertJob.get(values);
    if (!row) throw jobExistsError(values.job_id);
    return jobFromRow(row);
  }

  /**
   * Changes a job's definition. When its schedule or `enabled` changes, the next run is computed
   * afresh from now; otherwise the runtime state is kept.
   */
  update(jobId: string, patch: CronJobPatch): CronJob {
    const id = checkText("cron job id", jobId, 256);
    return this.db.tx(() => {
      const current = jobFromRow(this.require(id));
      const values = updatedValues(current, patch, this.clock(), this.timeZone);
      return jobFromRow(this.replaceDefinition.get(values) as CronJobRow);
    });
  }

  /**
   * Replaces a job's runtime state with a legacy `state` object, as the jobs-state sidecar keeps it
   * (`nextRunAtMs`, `lastRunAtMs`, `lastStatus`, `consecutiveErrors` …): what an import of that file
   * calls after the jobs exist. A missing `nextRunAtMs` is computed from now.
   */
  restoreState(jobId: string, state: LegacyCronState): CronJob {
    const id = checkText("cron job id", jobId, 256);
    if (!isPlainObject(state)) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `cron job ${id}: state must be a plain JSON object`,
      );
    }
    return this.db.tx(() => {
      const job = jobFromRow(this.require(id));
      const now = this.clock();
      const schedule = parseSchedule(job.schedule, this.timeZone);
      const definition = { ...job.definition, enabled: job.enabled, state };
      const values = seededState(definition, schedule, now, job.createdAt);
      return jobFromRow(this.restore.get({ ...values, job_id: id, updated_at: now }) as CronJobRow);
    });
  }

  /** Removes a job and its run log. */
  remove(jobId: string): boolean {
    const id = checkText("cron job id", jobId, 256);
    return this.db.tx(() => {
      this.logs.deleteJob(id);
      return this.deleteJob.run({ jobId: id }).changes > 0;
    });
  }

  get(jobId: string): CronJob | undefined {
    const row = this.selectOne.get({ jobId: checkText("cron job id", jobId, 256) });
    return row ? jobFromRow(row) : undefined;
  }

  list(options: CronListOptions = {}): CronJob[] {
    return this.listPage.all(listParams(options)).map(jobFromRow);
  }

  /** Enabled jobs whose next run is at or before `now`, earliest first. */
  due(now: number = this.clock(), options: { limit?: number } = {}): CronJob[] {
    const { limit } = checkOptions(options, ["limit"], "CronStore.due");
    return this.selectDue
      .all(checkInteger("now", now, 0, Number.MAX_SAFE_INTEGER), checkLimit(limit))
      .map(jobFromRow);
  }

  /** When the earliest enabled job is next due (a scheduler sleeps until then), if any. */
  nextDueAt(): number | null {
    return this.selectNextDue.get()?.at ?? null;
  }

  /**
   * Claims up to `limit` due jobs for `owner` until `leaseMs` from now, earliest first, in one
   * transaction: each under a fresh claim id, and none claimed by another claimer whose claim is
   * still running. `recordRun(jobId, run, { claimId })` settles a claim.
   */
  claimDue(owner: string, options: CronClaimOptions): ClaimedCronJob[] {
    const params = claimParams(owner, options, this.clock());
    return this.db
      .tx(() => this.claim.all(params))
      .map(claimedFromRow)
      .sort(byNextRun);
  }

  /** When a job can next be claimed (its next run, or the end of its claim), if any. */
  nextClaimableAt(): number | null {
    return this.selectNextClaimable.get()?.at ?? null;
  }

  /**
   * Records a finished run in one transaction: the job's runtime state (last status, error,
   * consecutive errors, next run computed from when the run finished) and a run-log row, then trims
   * the job's log to `keepRunsPerJob` rows. Ends the job's claim; with `claimId`, E_CONFLICT (and
   * nothing written) when the job is no longer under that claim.
   */
  recordRun(jobId: string, run: CronRunInput, options: CronRecordOptions = {}): CronJob {
    const id = checkText("cron job id", jobId, 256);
    const checked = checkRun(run);
    const claimId = checkRecordOptions(options);
    const log = runLogValues(id, checked);
    return this.db.tx(() => {
      const current = this.require(id);
      checkClaimHeld(current, claimId);
      const values = runStateValues(jobFromRow(current), checked, this.clock(), this.timeZone);
      const row = this.updateState.get(values);
      this.logs.appendValues(log);
      return jobFromRow(row as CronJobRow);
    });
  }

  /** Run history of a job, newest first. */
  runs(jobId: string, options: { limit?: number; before?: number } = {}): CronRunLog[] {
    return this.logs.list(checkText("cron job id", jobId, 256), options);
  }

  private require(jobId: string): CronJobRow {
    const row = this.selectOne.get({ jobId });
    if (!row) throw noJob(jobId);
    return row;
  }
}

export function noJob(jobId: string): StateError {
  return new StateError("E_NOT_FOUND", `no cron job ${jobId}`, { details: { jobId } });
}

/** Claims come back earliest first, as they were picked (RETURNING keeps no order). */
export function byNextRun(a: ClaimedCronJob, b: ClaimedCronJob): number {
  return (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0) || (a.jobId < b.jobId ? -1 : 1);
}
