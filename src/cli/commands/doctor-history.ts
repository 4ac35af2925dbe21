import { describeInterruptedRuns, type InterruptedRun } from "../../backup/interrupted-runs.js";
import { settleInterruptedRuns } from "../../doctor/interrupted-runs.js";
import { problemsOfRun } from "../../doctor/run-problems.js";
import { type HomeOptions, type JsonOption, withHome } from "../common.js";
import { printJson, renderTable } from "../output.js";

/** `doctor --history`: past migration runs, with their problems and quarantined lines. */
export function showHistory(options: HomeOptions & JsonOption): void {
  let found: InterruptedRun[] = [];
  const runs = withHome(options, false, (home) => {
    found = settleInterruptedRuns(home);
    const counts = home.quarantine.countsByRun();
    return home.migrations.listRuns(100).map((run) => ({
      ...run,
      problems: problemsOfRun(home, run.id),
      quarantined: counts.get(run.id) ?? 0,
    }));
  });
  const notes = describeInterruptedRuns(found);
  if (options.json) {
    for (const note of notes) process.stderr.write(`${note}\n`);
    printJson(runs);
    return;
  }
  const out = [
    ...notes,
    renderTable(runs, [
      { header: "RUN", value: (r) => r.id },
      { header: "STARTED", value: (r) => new Date(r.startedAt).toISOString() },
      { header: "STATUS", value: (r) => r.status },
      { header: "PROBLEMS", value: (r) => r.problems.length, align: "right" },
      { header: "QUARANTINED", value: (r) => r.quarantined, align: "right" },
      { header: "BACKUP", value: (r) => String(r.report.backupPath ?? "") },
    ]),
  ];
  for (const run of runs.filter((r) => r.problems.length > 0)) {
    out.push("", `${run.id}:`);
    for (const p of run.problems.slice(0, 20)) {
      const where =
        p.line !== null ? `${p.path}:${p.line}` : p.key !== null ? `${p.path} [${p.key}]` : p.path;
      out.push(`  ${where}: ${p.reason}${p.quarantined ? " (quarantined)" : ""}`);
    }
    if (run.problems.length > 20)
      out.push(`  … ${run.problems.length - 20} more (doctor --history --json lists them)`);
  }
  if (runs.some((r) => r.quarantined > 0))
    out.push("", "doctor --quarantined lists the quarantined lines; --out FILE exports them.");
  process.stdout.write(`${out.join("\n")}\n`);
}
