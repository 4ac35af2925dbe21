import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import type { CronSchedule } from "../../schedule/schedule.js";
import type { CronJob, CronRunLog } from "../../stores/global/cron-rows.js";
import {
  addExamples,
  addHomeOption,
  addJsonOption,
  type JsonOption,
  parseInteger,
} from "../common.js";
import {
  addControlPlaneOption,
  type ControlPlaneOption,
  withControlPlane,
} from "../control-plane-option.js";
import { moreLine, printJson, renderTable, shellArg } from "../output.js";

interface ListOptions extends ControlPlaneOption, JsonOption {
  agent?: string;
  after?: string;
  limit: string;
  full?: boolean;
}

interface RunsOptions extends ControlPlaneOption, JsonOption {
  before?: string;
  limit: string;
  full?: boolean;
}

function duration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "m"],
    [1000, "s"],
  ];
  const unit = units.find(([size]) => ms % size === 0);
  return unit ? `${ms / unit[0]}${unit[1]}` : `${ms}ms`;
}

/** One line per schedule kind, as an operator would write it. */
export function describeSchedule(schedule: CronSchedule): string {
  const s = schedule as Record<string, unknown>;
  if (typeof s.everyMs === "number") return `every ${duration(s.everyMs)}`;
  const expr = s.expr ?? s.cron;
  if (typeof expr === "string")
    return typeof s.tz === "string" ? `cron ${expr} (${s.tz})` : `cron ${expr}`;
  const at = s.atMs ?? s.at;
  if (typeof at === "number") return `at ${new Date(at).toISOString()}`;
  return typeof at === "string" ? `at ${at}` : JSON.stringify(schedule);
}

function time(ms: number | null): string {
  return ms === null ? "-" : new Date(ms).toISOString();
}

function render(jobs: readonly CronJob[], full: boolean): string {
  return renderTable(
    jobs,
    [
      { header: "ID", value: (j) => j.jobId },
      { header: "NAME", value: (j) => j.name ?? "-", max: 40 },
      { header: "AGENT", value: (j) => j.agentId ?? "-" },
      { header: "ENABLED", value: (j) => (j.enabled ? "yes" : "no") },
      { header: "SCHEDULE", value: (j) => describeSchedule(j.schedule) },
      { header: "NEXT RUN", value: (j) => time(j.nextRunAt) },
      { header: "LAST RUN", value: (j) => time(j.lastRunAt) },
      { header: "STATUS", value: (j) => j.lastStatus ?? "-" },
      { header: "ERRORS", value: (j) => j.consecutiveErrors, align: "right" },
    ],
    { full },
  );
}

const LIST_EXAMPLES = `
Examples:
  agentstate cron list
  agentstate cron list --agent main --full
  agentstate cron list --limit 100 --after <the job id after more:>

When more jobs follow, the last line is \`more: --after <job-id>\`.`;

const RUNS_EXAMPLES = `
Examples:
  agentstate cron runs morning-brief --limit 20
  agentstate cron runs morning-brief --full
  agentstate cron runs morning-brief --before <the run id after more:>

When older runs follow, the last line is \`more: --before <run-id>\`.`;

function registerList(cron: Command): void {
  const list = cron
    .command("list")
    .description("list cron jobs by id with their schedule, next run and last status")
    .option("--agent <id>", "only the jobs of this agent")
    .option("--after <job-id>", "only jobs whose id sorts after this one (the next page)")
    .option("--limit <n>", "at most this many jobs (1 to 10000)", "1000")
    .option("--full", "show names whole instead of cut to 40 characters with …")
    .addHelpText("after", LIST_EXAMPLES);
  addHomeOption(list);
  addJsonOption(list);
  addControlPlaneOption(list);
  list.action(async (options: ListOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, 10_000);
    const { jobs, more } = await withControlPlane(options, async ({ cron }) => {
      const query = { agentId: options.agent, after: options.after, limit };
      const jobs = await cron.list(query);
      const last = jobs.at(-1);
      const more =
        jobs.length === limit &&
        last !== undefined &&
        (await cron.list({ ...query, after: last.jobId, limit: 1 })).length > 0;
      return { jobs, more };
    });
    if (options.json) {
      printJson(jobs);
      return;
    }
    process.stdout.write(
      `${jobs.length === 0 ? "no cron jobs" : render(jobs, options.full === true)}\n`,
    );
    const last = jobs.at(-1);
    if (more && last) process.stdout.write(moreLine(`--after ${shellArg(last.jobId)}`));
  });
}

function registerRuns(cron: Command): void {
  const runs = cron
    .command("runs")
    .description("show the run log of one job, newest first")
    .argument("<job-id>", "the job's id (see `cron list`)")
    .option("--before <run-id>", "only runs older than this one (the next page)")
    .option("--limit <n>", "at most this many runs (1 to 10000)", "50")
    .option("--full", "show errors whole instead of cut to 60 characters with …")
    .addHelpText("after", RUNS_EXAMPLES);
  addHomeOption(runs);
  addJsonOption(runs);
  addControlPlaneOption(runs);
  runs.action(async (jobId: string, options: RunsOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, 10_000);
    const before =
      options.before === undefined
        ? undefined
        : parseInteger("--before", options.before, 1, Number.MAX_SAFE_INTEGER);
    const { log, more } = await withControlPlane(options, async (cp) => {
      if (!(await cp.cron.get(jobId))) {
        const where = cp.backend === "sqlite" ? "this home" : "the control plane";
        throw new StateError("E_NOT_FOUND", `no cron job "${jobId}" in ${where}`, {
          details: { jobId },
        });
      }
      const log = await cp.cron.runs(jobId, { limit, before });
      const last = log.at(-1);
      const more =
        log.length === limit &&
        last !== undefined &&
        (await cp.cron.runs(jobId, { limit: 1, before: last.id })).length > 0;
      return { log, more };
    });
    if (options.json) {
      printJson(log);
      return;
    }
    process.stdout.write(
      `${log.length === 0 ? "no runs recorded" : renderRuns(log, options.full === true)}\n`,
    );
    const last = log.at(-1);
    if (more && last) process.stdout.write(moreLine(`--before ${last.id}`));
  });
}

export function registerCron(program: Command): void {
  const cron = program
    .command("cron")
    .description("inspect scheduled jobs and their runtime state");
  addExamples(cron, [
    "agentstate cron list --agent main",
    "agentstate cron runs morning-brief --limit 20",
  ]);
  registerList(cron);
  registerRuns(cron);
}

function renderRuns(runs: readonly CronRunLog[], full: boolean): string {
  return renderTable(
    runs,
    [
      { header: "RAN AT", value: (r) => time(r.ranAt) },
      { header: "STATUS", value: (r) => r.status },
      {
        header: "DURATION",
        value: (r) => (r.durationMs === null ? "-" : `${r.durationMs}ms`),
        align: "right",
      },
      { header: "ERROR", value: (r) => r.error ?? "", max: 60 },
    ],
    { full },
  );
}
