import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import { type DoctorReport, runDoctorFix } from "../../doctor/fix.js";
import { type MigrationPlan, planMigration } from "../../doctor/plan.js";
import {
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  withHome,
} from "../common.js";
import { formatBytes, printJson, renderTable } from "../output.js";
import { progressReporter } from "./doctor-progress.js";

interface DoctorOptions extends HomeOptions, JsonOption {
  fix?: boolean;
  keepSources?: boolean;
  history?: boolean;
}

function problemLines(
  sources: ReadonlyArray<{
    path: string;
    problems: ReadonlyArray<{ line: number | null; key: string | null; reason: string }>;
  }>,
): string[] {
  const lines: string[] = [];
  for (const source of sources) {
    for (const p of source.problems.slice(0, 20)) {
      const where =
        p.line !== null
          ? `${source.path}:${p.line}`
          : p.key !== null
            ? `${source.path} [${p.key}]`
            : source.path;
      lines.push(`  ${where}: ${p.reason}`);
    }
    if (source.problems.length > 20)
      lines.push(`  ${source.path}: … ${source.problems.length - 20} more`);
  }
  return lines;
}

export function renderPlan(plan: MigrationPlan): string {
  const out = [`Legacy state in ${plan.home} (read-only plan; nothing was changed):`, ""];
  out.push(
    renderTable(plan.sources, [
      { header: "ACTION", value: (s) => s.action },
      { header: "KIND", value: (s) => s.kind },
      { header: "RECORDS", value: (s) => s.records ?? "-", align: "right" },
      { header: "SIZE", value: (s) => formatBytes(s.bytes), align: "right" },
      { header: "PATH", value: (s) => s.path },
      {
        header: "NOTE",
        value: (s) =>
          s.reason ?? (s.problemCount > 0 ? `${s.problemCount} problem(s)` : s.notes.join("; ")),
      },
    ]),
  );
  const problems = problemLines(plan.sources);
  if (problems.length > 0)
    out.push(
      "",
      "Problems (these records would not be imported; their files are kept):",
      ...problems,
    );
  const { summary } = plan;
  out.push(
    "",
    `${summary.import} to import (${summary.records} records, ${formatBytes(summary.bytes)}), ${summary.skip} already imported, ${summary.leave} left as files, ${summary.refuse} refused.`,
  );
  if (summary.import > 0) out.push("Run again with --fix to back up the home and import.");
  return out.join("\n");
}

export function renderReport(report: DoctorReport): string {
  const out = [`doctor --fix: ${report.status}${report.runId ? ` (run ${report.runId})` : ""}`];
  if (report.backupPath) out.push(`backup: ${report.backupPath} (verified)`);
  const shown = report.sources.filter((s) => s.status !== "left");
  if (shown.length > 0) {
    out.push(
      "",
      renderTable(shown, [
        { header: "STATUS", value: (s) => s.status },
        { header: "KIND", value: (s) => s.kind },
        { header: "RECORDS", value: (s) => s.records, align: "right" },
        { header: "REMOVED", value: (s) => (s.removed ? "yes" : "no") },
        { header: "PATH", value: (s) => s.path },
        { header: "ERROR", value: (s) => s.error ?? "" },
      ]),
    );
  }
  const problems = problemLines(report.sources);
  if (problems.length > 0)
    out.push("", "Records not imported (their files are kept):", ...problems);
  const t = report.totals;
  const seconds = ((report.finishedAt - report.startedAt) / 1000).toFixed(1);
  out.push(
    "",
    `imported ${t.imported}, skipped ${t.skipped}, warnings ${t.warning}, failed ${t.failed}; ${t.records} records in ${seconds}s`,
  );
  return out.join("\n");
}

function showHistory(options: DoctorOptions): void {
  const runs = withHome(options, false, (home) => home.migrations.listRuns(100));
  if (options.json) {
    printJson(runs);
    return;
  }
  process.stdout.write(
    `${renderTable(runs, [
      { header: "RUN", value: (r) => r.id },
      { header: "STARTED", value: (r) => new Date(r.startedAt).toISOString() },
      { header: "STATUS", value: (r) => r.status },
      { header: "BACKUP", value: (r) => String(r.report.backupPath ?? "") },
    ])}\n`,
  );
}

async function fix(options: DoctorOptions): Promise<void> {
  const progress = options.json ? undefined : progressReporter();
  let report: DoctorReport;
  try {
    report = await runDoctorFix({
      home: options.home,
      keepSources: options.keepSources === true,
      ...(progress ? { onProgress: progress.update } : {}),
    });
  } finally {
    progress?.stop();
  }
  if (options.json) printJson(report);
  else process.stdout.write(`${renderReport(report)}\n`);
  if (report.status === "partial" || report.status === "failed") process.exitCode = 1;
}

export function registerDoctor(program: Command): void {
  const command = program
    .command("doctor")
    .description(
      "find legacy JSON/JSONL state in a home and plan its import (read-only); --fix backs up, imports and removes the imported files",
    )
    .option(
      "--fix",
      "back up the home, import every source, then remove the sources that imported completely",
    )
    .option("--keep-sources", "with --fix: leave imported source files in place")
    .option("--history", "list past migration runs");
  addHomeOption(command);
  addJsonOption(command);
  command.action(async (options: DoctorOptions) => {
    if (options.keepSources && !options.fix) {
      throw new StateError("E_INVALID_ARGUMENT", "--keep-sources only makes sense with --fix");
    }
    if (options.history) return showHistory(options);
    if (options.fix) return fix(options);
    const plan = planMigration(options.home);
    if (options.json) printJson(plan);
    else process.stdout.write(`${renderPlan(plan)}\n`);
  });
}
