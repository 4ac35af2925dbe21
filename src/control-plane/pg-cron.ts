import type { Pool, PoolClient } from "pg";
import { hostTimeZone } from "../schedule/time-zone.js";
import { type Clock, checkInteger, checkText } from "../stores/checks.js";
import {
  type CronClaimOptions,
  type CronRecordOptions,
  checkClaimHeld,
  checkRecordOptions,
  claimParams,
} from "../stores/global/cron-claims.js";
import {
  addedValues,
  type CronJobPatch,
  type CronRunInput,
  checkRun,
  jobExistsError,
  runStateValues,
  updatedValues,
} from "../stores/global/cron-definition.js";
import {
  type ClaimedCronJob,
  type CronJob,
  type CronJobDefinition,
  type CronJobRow,
  type CronRunLog,
  type CronRunLogRow,
  claimedFromRow,
  jobFromRow,
  runFromRow,
} from "../stores/global/cron-rows.js";
import { runLogValues, runsPage } from "../stores/global/cron-run-log.js";
import { CRON_RUN_LOG_SQL, CRON_SQL, cronClaimSql } from "../stores/global/cron-sql.js";
import {
  byNextRun,
  type CronListOptions,
  cronSettings,
  listParams,
  noJob,
} from "../stores/global/cron-store.js";
import type { ControlPlaneCron, ControlPlaneCronOptions } from "./control-plane.js";
import { pgStatements, query, transaction } from "./pg-statements.js";
import { CRON_SIGNAL, type WorkSignal } from "./work-signal.js";

/** The channel every added or changed cron job NOTIFYs (sent at commit, so rows stay the truth). */
export const CRON_CHANNEL = "agentstate_cron";
const NOTIFY = `pg_notify('${CRON_CHANNEL}', '')`;

// `CRON_SQL` as it is, and the few statements only PostgreSQL needs: a NOTIFY with the insert,
// the job locked for the read-modify-write of `update` and `recordRun`, SKIP LOCKED on claims.
const SQL = pgStatements("cron", {
  ...CRON_SQL,
  insert: `WITH added AS (${CRON_SQL.insert}) SELECT added.*, ${NOTIFY} AS notified FROM added`,
  lock: `${CRON_SQL.select} FOR UPDATE`,
  delete: `${CRON_SQL.delete} RETURNING job_id`,
  claim: cronClaimSql("FOR UPDATE SKIP LOCKED"),
  notify: `SELECT ${NOTIFY}`,
});
const LOG_SQL = pgStatements("cron_log", CRON_RUN_LOG_SQL);

/** Cron jobs on PostgreSQL: `CronStore`'s statements and rules; read-modify-writes lock the job. */
export class PgCron implements ControlPlaneCron {
  private readonly clock: Clock;
  private readonly keepRunsPerJob: number;
  private zone: string | undefined;

  constructor(
    private readonly pool: Pool,
    clock: Clock,
    private readonly signal: WorkSignal,
    private readonly listening: () => Promise<void>,
    settings: ControlPlaneCronOptions,
  ) {
    const checked = cronSettings({ ...settings, clock }, "cron");
    this.clock = checked.clock;
    this.zone = checked.defaultTimeZone;
    this.keepRunsPerJob = checked.keepRunsPerJob;
  }

  private get timeZone(): string {
    this.zone ??= hostTimeZone();
    return this.zone;
  }

  async add(definition: CronJobDefinition): Promise<CronJob> {
    const values = addedValues(definition, this.clock(), this.timeZone);
    const [row] = await query<CronJobRow>(this.pool, SQL.insert, values);
    if (!row) throw jobExistsError(values.job_id);
    return jobFromRow(row);
  }

  async get(jobId: string): Promise<CronJob | undefined> {
    const [row] = await query<CronJobRow>(this.pool, SQL.select, { jobId: checkId(jobId) });
    return row ? jobFromRow(row) : undefined;
  }

  async list(options: CronListOptions = {}): Promise<CronJob[]> {
    const rows = await query<CronJobRow>(this.pool, SQL.list, listParams(options));
    return rows.map(jobFromRow);
  }

  async update(jobId: string, patch: CronJobPatch): Promise<CronJob> {
    const id = checkId(jobId);
    return transaction(this.pool, async (client) => {
      const current = jobFromRow(await this.locked(client, id));
      const values = updatedValues(current, patch, this.clock(), this.timeZone);
      const [row] = await query<CronJobRow>(client, SQL.replaceDefinition, values);
      await query(client, SQL.notify, {});
      return jobFromRow(row as CronJobRow);
    });
  }

  async remove(jobId: string): Promise<boolean> {
    const id = checkId(jobId);
    return transaction(this.pool, async (client) => {
      await query(client, LOG_SQL.deleteJob, { jobId: id });
      return (await query(client, SQL.delete, { jobId: id })).length > 0;
    });
  }

  async runs(jobId: string, options: { limit?: number; before?: number } = {}) {
    const page = runsPage(checkId(jobId), options);
    const statement = page.before === null ? LOG_SQL.listFirst : LOG_SQL.listBefore;
    const rows = await query<CronRunLogRow>(this.pool, statement, page);
    return rows.map(runFromRow) as CronRunLog[];
  }

  async recordRun(jobId: string, run: CronRunInput, options: CronRecordOptions = {}) {
    const id = checkId(jobId);
    const checked = checkRun(run);
    const claimId = checkRecordOptions(options);
    const log = runLogValues(id, checked);
    return transaction(this.pool, async (client) => {
      const current = await this.locked(client, id);
      checkClaimHeld(current, claimId);
      const values = runStateValues(jobFromRow(current), checked, this.clock(), this.timeZone);
      const [row] = await query<CronJobRow>(client, SQL.updateState, values);
      await query(client, LOG_SQL.insert, log);
      await query(client, LOG_SQL.trim, { jobId: id, keep: this.keepRunsPerJob });
      return jobFromRow(row as CronJobRow);
    });
  }

  async claimDue(owner: string, options: CronClaimOptions): Promise<ClaimedCronJob[]> {
    const params = claimParams(owner, options, this.clock());
    const rows = await query<CronJobRow>(this.pool, SQL.claim, params);
    return rows.map(claimedFromRow).sort(byNextRun);
  }

  async waitForDue(timeoutMs: number): Promise<boolean> {
    const ms = checkInteger("timeoutMs", timeoutMs, 0, 2_147_483_647);
    await this.listening();
    return this.signal.wait(CRON_SIGNAL, ms, this.clock, async () => {
      const [row] = await query<{ at: number | null }>(this.pool, SQL.nextClaimable, {});
      return row?.at ?? null;
    });
  }

  private async locked(client: PoolClient, jobId: string): Promise<CronJobRow> {
    const [row] = await query<CronJobRow>(client, SQL.lock, { jobId });
    if (!row) throw noJob(jobId);
    return row;
  }
}

function checkId(jobId: unknown): string {
  return checkText("cron job id", jobId, 256);
}
