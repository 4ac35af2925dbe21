import type { Database } from "../db/database.js";

export const DAY_MS = 86_400_000;
export const CRON_STATUSES = ["ok", "error", "skipped"] as const;
export type CronStatus = (typeof CRON_STATUSES)[number];

export interface CronJobActivity {
  jobId: string;
  /** From `cron_jobs`; null for a job that is gone but still has runs in the log. */
  name: string | null;
  agentId: string | null;
  /** Runs per day by status, aligned with `CronActivity.days`. */
  counts: Record<CronStatus, number[]>;
  totals: Record<CronStatus, number>;
  /** The job's most recent failed run in the log, whenever it was. */
  lastError: { at: number; error: string | null } | null;
}

export interface CronActivity {
  /** Start of each UTC day in the window (Unix ms), oldest first; the last one is today. */
  days: number[];
  jobs: CronJobActivity[];
}

export interface CronActivityOptions {
  /** Days in the window, today included. */
  days: number;
  now?: number;
}

interface CountRow {
  jobId: string;
  day: number;
  status: CronStatus;
  n: number;
}

function jobsIn(
  db: Database,
  from: number,
): { jobId: string; name: string | null; agentId: string | null }[] {
  // Every defined job, and jobs deleted since that still have runs in the window.
  return db
    .prepare<{ jobId: string; name: string | null; agentId: string | null }>(
      `SELECT job_id AS jobId, name, agent_id AS agentId FROM cron_jobs
       UNION
       SELECT DISTINCT job_id, NULL, NULL FROM cron_run_logs
       WHERE ran_at >= ? AND job_id NOT IN (SELECT job_id FROM cron_jobs)
       ORDER BY jobId`,
    )
    .all(from);
}

/** Cron runs per job and UTC day, by status, with each job's last error. */
export function cronActivity(db: Database, options: CronActivityOptions): CronActivity {
  const { days: span, now = Date.now() } = options;
  const from = (Math.floor(now / DAY_MS) - (span - 1)) * DAY_MS;
  const to = from + span * DAY_MS;
  const days = Array.from({ length: span }, (_, i) => from + i * DAY_MS);
  const counts = db
    .prepare<CountRow>(
      `SELECT job_id AS jobId, CAST((ran_at - @from) / ${DAY_MS} AS INTEGER) AS day, status, count(*) AS n
       FROM cron_run_logs WHERE ran_at >= @from AND ran_at < @to
       GROUP BY job_id, day, status`,
    )
    .all({ from, to });
  const lastError = db.prepare<{ at: number; error: string | null }>(
    `SELECT ran_at AS at, error FROM cron_run_logs WHERE job_id = ? AND status = 'error'
     ORDER BY ran_at DESC, id DESC LIMIT 1`,
  );
  const jobs = jobsIn(db, from).map((job): CronJobActivity => {
    const zeros = () => new Array<number>(span).fill(0);
    return {
      ...job,
      counts: { ok: zeros(), error: zeros(), skipped: zeros() },
      totals: { ok: 0, error: 0, skipped: 0 },
      lastError: lastError.get(job.jobId) ?? null,
    };
  });
  const byId = new Map(jobs.map((job) => [job.jobId, job]));
  for (const row of counts) {
    const job = byId.get(row.jobId);
    if (job === undefined) continue;
    job.counts[row.status][row.day] = row.n;
    job.totals[row.status] += row.n;
  }
  return { days, jobs };
}
