import type { Command } from "commander";
import { describeInterruptedRuns } from "../../backup/interrupted-runs.js";
import { StateError } from "../../db/errors.js";
import { refuseHeldHome } from "../../db/file-holders.js";
import { type DoctorReport, runDoctorFix } from "../../doctor/fix.js";
import { type MigrationPlan, planMigration } from "../../doctor/plan.js";
import { resolveHomePath } from "../../home.js";
import { addHomeOption, addJsonOption, type HomeOptions, type JsonOption } from "../common.js";
import { cleanCell, formatBytes, printJson, renderTable, truncateMiddle } from "../output.js";
import { truncate } from "../render/style.js";
import {
  checkColdIndexesOf,
  renderColdIndexProblems,
  renderColdIndexRepairs,
  repairColdIndexesOf,
} from "./doctor-cold-index.js";
import {
  renderSalvage,
  reportDamagedDatabases,
  salvageDamagedDatabases,
} from "./doctor-databases.js";
import { showHistory } from "./doctor-history.js";
import { progressReporter } from "./doctor-progress.js";
import { type QuarantinedOptions, showQuarantined } from "./doctor-quarantined.js";

interface DoctorOptions extends HomeOptions, JsonOption, QuarantinedOptions {
  fix?: boolean;
  keepSources?: boolean;
  quarantine?: boolean;
  history?: boolean;
  quarantined?: boolean;
  verbose?: boolean;
  full?: boolean;
}

const EXAMPLES = `
Examples:
  agentstate doctor                              check databases and cold search indexes, plan an import
  agentstate doctor --fix                        salvage, rebuild cold search indexes, back up, import
  agentstate doctor --fix --quarantine           also finish sources with unreadable lines (kept as bytes)
  agentstate doctor --history                    past runs, with their problems and quarantined lines
  agentstate doctor --quarantined                list quarantined lines (file:line, bytes, reason)
  agentstate doctor --quarantined --json         the same with each line's bytes in base64
  agentstate doctor --quarantined --out bad.jsonl   export the raw lines, byte for byte
`;

/** Output stays within this many columns unless `--full` (paths are cut in the middle). */
const WIDTH = 100;
const PATH_WIDTH = 52;

interface RenderOptions {
  verbose: boolean;
  full: boolean;
}

function fitWidth(line: string, full: boolean): string {
  return full ? line : truncate(line, WIDTH);
}

/**
 * `  <path><rest>` in 100 columns. A problem keeps its `file:line` whole and cuts its reason; a
 * note (whose file the table above names) keeps its text and cuts the path in the middle.
 */
function pathLine(path: string, rest: string, full: boolean, keep: "path" | "rest"): string {
  if (full) return `  ${path}${rest}`;
  if (keep === "path") return fitWidth(`  ${truncateMiddle(path, WIDTH - 32)}${rest}`, false);
  const room = Math.max(24, WIDTH - 2 - Array.from(rest).length);
  return fitWidth(`  ${truncateMiddle(path, room)}${rest}`, false);
}

function problemLines(
  sources: ReadonlyArray<{
    path: string;
    problems: ReadonlyArray<{ line: number | null; key: string | null; reason: string }>;
  }>,
  full: boolean,
): string[] {
  const lines: string[] = [];
  for (const source of sources) {
    for (const p of full ? source.problems : source.problems.slice(0, 20)) {
      const where = p.line !== null ? `:${p.line}` : p.key !== null ? ` [${p.key}]` : "";
      lines.push(pathLine(source.path, `${where}: ${cleanCell(p.reason)}`, full, "path"));
    }
    if (!full && source.problems.length > 20)
      lines.push(
        fitWidth(`  ${source.path}: … ${source.problems.length - 20} more (--full)`, false),
      );
  }
  return lines;
}

function planNote(source: MigrationPlan["sources"][number]): string | null {
  const notes = [
    source.reason,
    source.problemCount > 0 ? `${source.problemCount} problem(s)` : null,
    ...source.notes,
  ].filter((note) => note !== null);
  return notes.length > 0 ? notes.join("; ") : null;
}

export function renderPlan(plan: MigrationPlan, full = false): string {
  const out = [`Legacy state in ${plan.home} (read-only plan; nothing was changed):`, ""];
  out.push(
    renderTable(
      plan.sources,
      [
        { header: "ACTION", value: (s) => s.action },
        { header: "KIND", value: (s) => s.kind },
        { header: "RECORDS", value: (s) => s.records ?? "-", align: "right" },
        { header: "SIZE", value: (s) => formatBytes(s.bytes), align: "right" },
        { header: "PATH", value: (s) => s.path, max: PATH_WIDTH, cut: "middle" },
      ],
      { full },
    ),
  );
  const notes = plan.sources.flatMap((s) => {
    const note = planNote(s);
    return note === null ? [] : [pathLine(s.path, `: ${cleanCell(note)}`, full, "rest")];
  });
  if (notes.length > 0) out.push("", "Notes:", ...notes);
  const problems = problemLines(plan.sources, full);
  if (problems.length > 0)
    out.push(
      "",
      "Problems (these records would not be imported; their files are kept):",
      ...problems,
      "doctor --fix --quarantine keeps such lines in the database instead and finishes their sources.",
    );
  const { summary } = plan;
  out.push(
    "",
    `${summary.import} to import (${summary.records} records, ${formatBytes(summary.bytes)}), ${summary.skip} already imported, ${summary.leave} left as files, ${summary.refuse} refused.`,
  );
  if (summary.import > 0) out.push("Run again with --fix to back up the home and import.");
  if (plan.hint) out.push(plan.hint);
  return out.join("\n");
}

type FixedSource = DoctorReport["sources"][number];
type Ending = Exclude<FixedSource["status"], "left">;
const COUNTED: readonly Ending[] = ["imported", "skipped", "warning", "failed", "refused"];
type KindRow = { kind: string; records: number; removed: number } & Record<Ending, number>;

/** One row per kind of source: how many ended each way, records, files removed. */
function kindSummary(sources: readonly FixedSource[]): KindRow[] {
  const rows = new Map<string, KindRow>();
  for (const source of sources) {
    if (source.status === "left") continue;
    const row = rows.get(source.kind) ?? {
      kind: source.kind,
      imported: 0,
      skipped: 0,
      warning: 0,
      failed: 0,
      refused: 0,
      records: 0,
      removed: 0,
    };
    row[source.status]++;
    row.records += source.records;
    row.removed += source.removed ? 1 : 0;
    rows.set(source.kind, row);
  }
  return [...rows.values()];
}

function sourceTable(sources: readonly FixedSource[], full: boolean): string[] {
  const table = renderTable(
    sources,
    [
      { header: "STATUS", value: (s) => s.status },
      { header: "KIND", value: (s) => s.kind },
      { header: "RECORDS", value: (s) => s.records, align: "right" },
      { header: "REMOVED", value: (s) => (s.removed ? "yes" : "no") },
      { header: "PATH", value: (s) => s.path, max: PATH_WIDTH, cut: "middle" },
    ],
    { full },
  );
  const errors = sources.flatMap((s) =>
    s.error ? [pathLine(s.path, `: ${cleanCell(s.error)}`, full, "path")] : [],
  );
  return ["", table, ...(errors.length > 0 ? ["", "Errors:", ...errors] : [])];
}

export function renderReport(report: DoctorReport, options: RenderOptions): string {
  const { verbose, full } = options;
  const out = [
    ...describeInterruptedRuns(report.interrupted),
    `doctor --fix: ${report.status}${report.runId ? ` (run ${report.runId})` : ""}`,
  ];
  if (report.backupPath) out.push(`backup: ${report.backupPath} (verified)`);
  const kinds = kindSummary(report.sources);
  if (kinds.length > 0) {
    out.push(
      "",
      renderTable(kinds, [
        { header: "KIND", value: (k) => k.kind },
        ...COUNTED.map((status) => ({
          header: status.toUpperCase(),
          value: (k: KindRow) => k[status],
          align: "right" as const,
        })),
        { header: "RECORDS", value: (k) => k.records, align: "right" },
        { header: "REMOVED", value: (k) => k.removed, align: "right" },
      ]),
    );
  }
  const troubled = report.sources.filter(
    (s) => s.status === "warning" || s.status === "failed" || s.status === "refused",
  );
  const listed = verbose ? report.sources.filter((s) => s.status !== "left") : troubled;
  if (listed.length > 0) out.push(...sourceTable(listed, full));
  else if (!verbose && report.sources.length > 0) out.push("", "every file: --verbose");
  const notes = report.sources.flatMap((s) =>
    s.notes.map((note) => pathLine(s.path, `: ${cleanCell(note)}`, full, "rest")),
  );
  if (notes.length > 0) out.push("", "Notes:", ...notes);
  const problems = problemLines(report.sources, full);
  if (problems.length > 0) {
    const quarantined = report.sources.some((s) => s.quarantined > 0);
    out.push(
      "",
      quarantined
        ? "Lines not imported (quarantined ones are kept in the database; other files are kept):"
        : "Records not imported (their files are kept):",
      ...problems,
    );
    if (report.sources.some((s) => s.status === "warning" && s.problems.length > 0))
      out.push(
        "",
        "Run doctor --fix --quarantine to keep these lines in the database and finish their sources",
        "(doctor --quarantined lists them).",
      );
  }
  const t = report.totals;
  const seconds = ((report.finishedAt - report.startedAt) / 1000).toFixed(1);
  out.push(
    "",
    `imported ${t.imported}, skipped ${t.skipped}, warnings ${t.warning}, failed ${t.failed}; ${t.records} records${t.quarantined > 0 ? `, ${t.quarantined} line(s) quarantined` : ""} in ${seconds}s`,
  );
  return out.join("\n");
}

/** Shell convention: a command stopped by a signal exits 128 + the signal's number. */
const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

/**
 * While the import runs, SIGINT and SIGTERM ask it to stop at the next group boundary instead of
 * killing the process, so the run is recorded as interrupted and every database is closed.
 */
function stopOnSignals(): {
  signal: AbortSignal;
  received: () => StopSignal | null;
  done: () => void;
} {
  const controller = new AbortController();
  let received: StopSignal | null = null;
  const handlers = (Object.keys(SIGNAL_EXIT_CODES) as StopSignal[]).map((name) => {
    const handler = () => {
      received ??= name;
      controller.abort();
    };
    process.on(name, handler);
    return () => process.off(name, handler);
  });
  return {
    signal: controller.signal,
    received: () => received,
    done: () => {
      for (const remove of handlers) remove();
    },
  };
}

async function fix(options: DoctorOptions): Promise<void> {
  refuseHeldHome(resolveHomePath(options.home), "run doctor --fix");
  const salvaged = salvageDamagedDatabases(options);
  if (salvaged.length > 0 && !options.json) process.stdout.write(`${renderSalvage(salvaged)}\n`);
  const coldIndexes = repairColdIndexesOf(options);
  if (coldIndexes.length > 0 && !options.json) {
    process.stdout.write(`${renderColdIndexRepairs(coldIndexes)}\n`);
  }
  const progress = options.json ? undefined : progressReporter();
  const stop = stopOnSignals();
  let report: DoctorReport;
  try {
    report = await runDoctorFix({
      home: options.home,
      keepSources: options.keepSources === true,
      quarantine: options.quarantine === true,
      signal: stop.signal,
      ...(progress ? { onProgress: progress.update } : {}),
    });
  } finally {
    progress?.stop();
    stop.done();
  }
  if (options.json) {
    printJson({
      ...report,
      ...(salvaged.length > 0 ? { salvaged } : {}),
      ...(coldIndexes.length > 0 ? { coldIndexes } : {}),
    });
  } else {
    const render = { verbose: options.verbose === true, full: options.full === true };
    process.stdout.write(`${renderReport(report, render)}\n`);
  }
  const signal = stop.received();
  if (report.status === "interrupted" && signal !== null)
    process.exitCode = SIGNAL_EXIT_CODES[signal];
  // A refused source stays where it is, so a later run that has nothing left to import fails too.
  else if (
    report.status === "partial" ||
    report.status === "failed" ||
    report.sources.some((source) => source.status === "refused")
  )
    process.exitCode = 1;
}

function checkCombination(options: DoctorOptions): void {
  const needs = (flag: string, present: unknown, required: unknown, what: string) => {
    if (present && !required)
      throw new StateError("E_INVALID_ARGUMENT", `${flag} only makes sense with ${what}`);
  };
  needs("--quarantine", options.quarantine, options.fix, "--fix");
  needs("--run", options.run !== undefined, options.quarantined, "--quarantined");
  needs("--out", options.out !== undefined, options.quarantined, "--quarantined");
  needs("--force", options.force, options.out !== undefined, "--out");
  if (options.quarantined && (options.fix || options.history)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      "--quarantined lists quarantined lines; it cannot be combined with --fix or --history",
    );
  }
}

export function registerDoctor(program: Command): void {
  const command = program
    .command("doctor")
    .description(
      "check a home's databases and cold search indexes, find legacy JSON/JSONL state and plan its import (read-only); --fix salvages and rebuilds what failed its check, backs up, imports and removes the imported files",
    )
    .option(
      "--fix",
      "salvage damaged databases, rebuild cold search indexes that fail their check, back up the home, import every source, then remove the sources that imported completely",
    )
    .option("--keep-sources", "with --fix: leave imported source files in place")
    .option(
      "--quarantine",
      "with --fix: keep each line that cannot be imported as bytes in the database (file, line, reason), so its source completes and is removed",
    )
    .option("--history", "list past migration runs with their problems and quarantined lines")
    .option("--quarantined", "list the quarantined lines (file:line, bytes, reason)")
    .option("--run <id>", "with --quarantined: only the lines this migration run quarantined")
    .option(
      "--out <file>",
      "with --quarantined: write the raw lines (or with --json the JSON list) to this file (mode 0600)",
    )
    .option("--force", "with --out: replace the file when it exists")
    .option("--verbose", "with --fix: list every file, not only those with problems")
    .option("--full", "show paths, notes and problems whole instead of fitting 100 columns")
    .addHelpText("after", EXAMPLES);
  addHomeOption(command);
  addJsonOption(command);
  command.action(async (options: DoctorOptions) => {
    if (options.keepSources && !options.fix) {
      throw new StateError("E_INVALID_ARGUMENT", "--keep-sources only makes sense with --fix");
    }
    checkCombination(options);
    if (options.history) return showHistory(options);
    if (options.quarantined) return showQuarantined(options);
    if (options.fix) return fix(options);
    if (reportDamagedDatabases(options)) return;
    const coldIndexes = checkColdIndexesOf(options);
    const plan = planMigration(options.home);
    if (options.json) printJson(coldIndexes.length > 0 ? { ...plan, coldIndexes } : plan);
    else {
      const text = renderPlan(plan, options.full === true);
      process.stdout.write(`${renderColdIndexProblems(coldIndexes)}${text}\n`);
    }
  });
}
