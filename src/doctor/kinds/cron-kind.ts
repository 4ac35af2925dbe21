import { isStateError } from "../../db/errors.js";
import type { CronJobDefinition, LegacyCronState } from "../../stores/global/cron-rows.js";
import {
  type KeyedProblem,
  readCronJobs,
  readCronJobsState,
  readCronRuns,
} from "../sources/cron-source.js";
import {
  type ImportContext,
  type ImportOutcome,
  type KindHandler,
  problem,
  type SourceProblem,
  type SourceScan,
} from "./types.js";

function problemsOf(problems: readonly KeyedProblem[]): SourceProblem[] {
  return problems.map((p) => problem(p.line, p.reason, p.key));
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Imports keyed records in one transaction: `apply` returns true when it wrote the record, false
 * when the database already had it; an invalid record becomes a problem naming its key.
 */
function importKeyed<T extends { id: string }>(
  context: ImportContext,
  read: { records: T[]; problems: KeyedProblem[] },
  apply: (record: T) => boolean | string,
): ImportOutcome {
  const outcome: ImportOutcome = {
    records: 0,
    alreadyPresent: 0,
    problems: problemsOf(read.problems),
  };
  context.home.db.tx(() => {
    for (const record of read.records) {
      try {
        const applied = apply(record);
        if (typeof applied === "string") {
          outcome.problems.push(problem(null, applied, record.id));
          continue;
        }
        outcome.records++;
        if (!applied) outcome.alreadyPresent++;
      } catch (error) {
        if (!isStateError(error, "E_INVALID_ARGUMENT")) throw error;
        outcome.problems.push(problem(null, reasonOf(error), record.id));
      }
    }
  });
  return outcome;
}

/**
 * `cron/jobs.json`: each job becomes a `cron_jobs` row with its definition kept verbatim and its
 * inline `state` seeding next run and last status. A job whose id is already in the database is
 * left as the database has it: after a migration the scheduler owns the row.
 */
export const cronJobsKind: KindHandler = {
  scan(absPath) {
    const read = readCronJobs(absPath);
    return { records: read.records.length, problems: problemsOf(read.problems), notes: read.notes };
  },
  import(context) {
    const cron = context.home.cron;
    return importKeyed(context, readCronJobs(context.source.absPath), ({ id, job }) => {
      if (cron.get(id)) return false;
      cron.add(job as CronJobDefinition);
      return true;
    });
  },
};

/**
 * `cron/jobs-state.json`: the runtime state newer gateways keep beside `jobs.json`. It replaces
 * the state of jobs that exist; state for a job that does not is reported, never dropped silently.
 */
export const cronJobsStateKind: KindHandler = {
  scan(absPath) {
    const read = readCronJobsState(absPath);
    return { records: read.records.length, problems: problemsOf(read.problems), notes: read.notes };
  },
  import(context) {
    const cron = context.home.cron;
    return importKeyed(context, readCronJobsState(context.source.absPath), ({ id, state }) => {
      if (!cron.get(id)) return "state for a job that is not in jobs.json";
      cron.restoreState(id, state as LegacyCronState);
      return true;
    });
  },
};

function scanRuns(absPath: string): SourceScan {
  const scan: SourceScan = { records: 0, problems: [], notes: [] };
  let passedOver = 0;
  for (const item of readCronRuns(absPath)) {
    if ("skipped" in item) passedOver++;
    else if ("reason" in item) scan.problems.push(problem(item.line, item.reason, item.key));
    else scan.records++;
  }
  if (passedOver > 0) scan.notes.push(`${passedOver} line(s) are not finished runs`);
  return scan;
}

/**
 * `cron/runs/<jobId>.jsonl`: each finished run becomes a `cron_run_logs` row holding the line
 * verbatim. The file is one transaction, and a run already logged is not logged again, so a rerun
 * after an interruption adds nothing twice. Runs of deleted jobs are history too and are kept.
 */
export const cronRunsKind: KindHandler = {
  scan: scanRuns,
  import(context: ImportContext) {
    const outcome: ImportOutcome = { records: 0, alreadyPresent: 0, problems: [] };
    const logs = context.home.cron.logs;
    context.home.db.tx(() => {
      for (const item of readCronRuns(context.source.absPath)) {
        if ("skipped" in item) continue;
        if ("reason" in item) {
          outcome.problems.push(problem(item.line, item.reason, item.key));
          continue;
        }
        const { jobId, status, ranAt, durationMs, error, record } = item;
        const added = logs.importRun(jobId, {
          status,
          ranAt,
          ...(durationMs === undefined ? {} : { durationMs }),
          ...(error === undefined ? {} : { error }),
          record,
        });
        outcome.records++;
        if (!added) outcome.alreadyPresent++;
      }
    });
    return outcome;
  },
};
