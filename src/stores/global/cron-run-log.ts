import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { checkInteger, checkLimit, checkOptions, checkText, encodeRecord } from "../checks.js";
import { type CronRunInput, checkRun } from "./cron-definition.js";
import { type CronRunLog, type CronRunLogRow, runFromRow } from "./cron-rows.js";
import { CRON_RUN_LOG_SQL } from "./cron-sql.js";

/** A run's record is its summary and metadata; transcripts live with the agent. */
export const MAX_CRON_RUN_RECORD_BYTES = 256 * 1024;

export interface CronRunLogEntry {
  status: string;
  ranAt: number;
  durationMs?: number;
  error?: string;
  record?: { [key: string]: unknown };
}

/** The parameters of `CRON_RUN_LOG_SQL.insert` for one run: checked, its record encoded. */
export function runLogValues(jobId: string, entry: CronRunLogEntry) {
  const id = checkText("cron job id", jobId, 256);
  const run = checkRun(entry as CronRunInput, "CronRunLogStore.append");
  return {
    jobId: id,
    ranAt: run.ranAt,
    status: run.status,
    durationMs: run.durationMs ?? null,
    error: run.error ?? null,
    record: encodeRecord(`cron run record of ${id}`, run.record, MAX_CRON_RUN_RECORD_BYTES),
  };
}

/** The parameters of `CRON_RUN_LOG_SQL.listFirst`, or of `listBefore` when `before` is set. */
export function runsPage(jobId: string, options: { limit?: number; before?: number }) {
  const { limit, before } = checkOptions(options, ["limit", "before"], "CronStore.runs");
  return {
    jobId,
    limit: checkLimit(limit),
    before:
      before === undefined ? null : checkInteger("before", before, 1, Number.MAX_SAFE_INTEGER),
  };
}

/**
 * The run history of cron jobs (`cron_run_logs`), ordered by when each run ran (`ran_at`, then
 * id): a run imported later can be older than runs already logged. Retention is SQL: each append
 * trims its job to the newest `keepPerJob` runs through the (job_id, ran_at, id) index.
 */
export class CronRunLogStore {
  private readonly insert: SqlStatement;
  private readonly trim: SqlStatement;
  private readonly deleteAll: SqlStatement;
  private readonly listFirst: SqlStatement<CronRunLogRow>;
  private readonly listBefore: SqlStatement<CronRunLogRow>;
  private readonly pruneAll: SqlStatement;
  private readonly selectSame: SqlStatement<{ id: number }>;

  constructor(
    private readonly db: Database,
    readonly keepPerJob: number,
  ) {
    this.insert = db.prepare(CRON_RUN_LOG_SQL.insert);
    this.trim = db.prepare(CRON_RUN_LOG_SQL.trim);
    this.deleteAll = db.prepare(CRON_RUN_LOG_SQL.deleteJob);
    this.listFirst = db.prepare(CRON_RUN_LOG_SQL.listFirst);
    this.listBefore = db.prepare(CRON_RUN_LOG_SQL.listBefore);
    this.selectSame = db.prepare(
      `SELECT id FROM cron_run_logs
       WHERE job_id = ? AND ran_at = ? AND status = ? AND record_json = ? LIMIT 1`,
    );
    this.pruneAll = db.prepare(
      `DELETE FROM cron_run_logs WHERE id IN (
         SELECT id FROM (SELECT id, row_number() OVER (
                           PARTITION BY job_id ORDER BY ran_at DESC, id DESC) AS n
                         FROM cron_run_logs) WHERE n > ?)`,
    );
  }

  /**
   * Appends one run without touching the job: what `CronStore.recordRun` uses, and what an import
   * of past runs (whose job may be gone) calls directly. Returns the row id.
   */
  append(jobId: string, entry: CronRunLogEntry): number {
    return this.appendValues(runLogValues(jobId, entry));
  }

  /** Appends a run checked by `runLogValues`, and trims its job's log. */
  appendValues(values: ReturnType<typeof runLogValues>): number {
    return this.db.tx(() => {
      const { lastInsertRowid } = this.insert.run(values);
      this.trim.run({ jobId: values.jobId, keep: this.keepPerJob });
      return Number(lastInsertRowid);
    });
  }

  /**
   * Appends a past run unless the same run (job, time, status and record) is already logged: how an
   * import stays idempotent when it is rerun after an interruption. True when it was added.
   */
  importRun(jobId: string, entry: CronRunLogEntry): boolean {
    const json = encodeRecord(
      `cron run record of ${jobId}`,
      entry.record ?? {},
      MAX_CRON_RUN_RECORD_BYTES,
    );
    return this.db.tx(() => {
      if (this.selectSame.get(jobId, entry.ranAt, entry.status, json)) return false;
      this.append(jobId, entry);
      return true;
    });
  }

  /** Newest run first; `before` is the `id` of the last row of the previous page. */
  list(jobId: string, options: { limit?: number; before?: number } = {}): CronRunLog[] {
    const page = runsPage(jobId, options);
    const statement = page.before === null ? this.listFirst : this.listBefore;
    return statement.all(page).map(runFromRow);
  }

  deleteJob(jobId: string): number {
    return this.deleteAll.run({ jobId }).changes;
  }

  /** Trims every job's log to its newest `keepPerJob` runs; returns how many rows went. */
  prune(keepPerJob: number = this.keepPerJob): number {
    return this.pruneAll.run(checkInteger("keepPerJob", keepPerJob, 0, Number.MAX_SAFE_INTEGER))
      .changes;
  }
}
