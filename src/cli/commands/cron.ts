import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import type { CronSchedule } from "../../schedule/schedule.js";
import type { CronJob, CronRunLog } from "../../stores/global/cron-rows.js";
import {
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withHome,
} from "../common.js";
import { printJson, renderTable } from "../output.js";

interface ListOptions extends HomeOptions, JsonOption {
  agent?: string;
  limit: string;
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

function render(jobs: readonly CronJob[]): string {
  return renderTable(jobs, [
    { header: "ID", value: (j) => j.jobId },
    { header: "NAME", value: (j) => (j.name ?? "-").slice(0, 40) },
    { header: "AGENT", value: (j) => j.agentId ?? "-" },
    { header: "ENABLED", value: (j) => (j.enabled ? "yes" : "no") },
    { header: "SCHEDULE", value: (j) => describeSchedule(j.schedule) },
    { header: "NEXT RUN", value: (j) => time(j.nextRunAt) },
    { header: "LAST RUN", value: (j) => time(j.lastRunAt) },
    { header: "STATUS", value: (j) => j.lastStatus ?? "-" },
    { header: "ERRORS", value: (j) => j.consecutiveErrors, align: "right" },
  ]);
}

export function registerCron(program: Command): void {
  const cron = program
    .command("cron")
    .description("inspect scheduled jobs and their runtime state");
  const list = cron
    .command("list")
    .description("list cron jobs with their schedule, next run and last status")
    .option("--agent <id>", "only the jobs of this agent")
    .option("--limit <n>", "at most this many jobs", "1000");
  addHomeOption(list);
  addJsonOption(list);
  list.action((options: ListOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, 10_000);
    const jobs = withHome(options, false, (home) =>
      home.cron.list({ agentId: options.agent, limit }),
    );
    if (options.json) printJson(jobs);
    else process.stdout.write(`${jobs.length === 0 ? "no cron jobs" : render(jobs)}\n`);
  });

  const runs = cron
    .command("runs")
    .description("show the run log of one job, newest first")
    .argument("<job-id>", "the job's id (see `cron list`)")
    .option("--limit <n>", "at most this many runs", "50");
  addHomeOption(runs);
  addJsonOption(runs);
  runs.action((jobId: string, options: HomeOptions & JsonOption & { limit: string }) => {
    const limit = parseInteger("--limit", options.limit, 1, 10_000);
    const log = withHome(options, false, (home) => {
      if (!home.cron.get(jobId)) {
        throw new StateError("E_NOT_FOUND", `no cron job "${jobId}" in ${home.path}`, {
          details: { jobId },
        });
      }
      return home.cron.runs(jobId, { limit });
    });
    if (options.json) printJson(log);
    else process.stdout.write(`${log.length === 0 ? "no runs recorded" : renderRuns(log)}\n`);
  });
}

function renderRuns(runs: readonly CronRunLog[]): string {
  return renderTable(runs, [
    { header: "RAN AT", value: (r) => time(r.ranAt) },
    { header: "STATUS", value: (r) => r.status },
    {
      header: "DURATION",
      value: (r) => (r.durationMs === null ? "-" : `${r.durationMs}ms`),
      align: "right",
    },
    { header: "ERROR", value: (r) => (r.error ?? "").slice(0, 60) },
  ]);
}
