import { dirname } from "node:path";
import type { Command } from "commander";
import { loadCommand } from "../../backup/control-plane-load.js";
import {
  type BackupProgress,
  type BackupReport,
  createBackup,
} from "../../backup/create-backup.js";
import {
  describeInterruptedRuns,
  settleInterruptedBackups,
} from "../../backup/interrupted-runs.js";
import { listBackups } from "../../backup/list-backups.js";
import { type PruneReport, pruneBackups } from "../../backup/prune-backups.js";
import { type RestoreReport, restoreBackup } from "../../backup/restore-backup.js";
import { type VerifyReport, verifyBackup } from "../../backup/verify-backup.js";
import { StateError } from "../../db/errors.js";
import { resolveHomePath } from "../../home.js";
import {
  addExamples,
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withHome,
} from "../common.js";
import {
  cleanCell,
  fetchPage,
  formatBytes,
  largerLimit,
  moreLine,
  pathInHome,
  printJson,
  renderTable,
} from "../output.js";
import { truncate } from "../render/style.js";

interface CreateOptions extends HomeOptions, JsonOption {
  out?: string;
  compress: boolean;
  controlPlane?: string;
}

interface RestoreOptions extends JsonOption {
  home: string;
  force?: boolean;
  controlPlane?: string;
}

/** `--control-plane`, else `$AGENTSTATE_CONTROL_PLANE` when it names a PostgreSQL server. */
function controlPlaneToDump(flag: string | undefined): string | undefined {
  if (flag !== undefined) return flag;
  const fromEnv = process.env.AGENTSTATE_CONTROL_PLANE;
  return fromEnv && /^postgres(ql)?:\/\//.test(fromEnv) ? fromEnv : undefined;
}

interface ListOptions extends HomeOptions, JsonOption {
  limit: string;
}

interface VerifyOptions extends JsonOption {
  full?: boolean;
}

interface PruneOptions extends HomeOptions, JsonOption {
  keep: string;
  dryRun?: boolean;
}

/** A one-line progress display on a terminal's stderr; nothing when stderr is not a terminal. */
function progressLine(): { onProgress?: (event: BackupProgress) => void; clear: () => void } {
  if (!process.stderr.isTTY) return { clear: () => undefined };
  let shown = 0;
  const onProgress = (event: BackupProgress) => {
    const now = Date.now();
    if (now - shown < 100) return;
    shown = now;
    const amount =
      event.phase === "dump"
        ? "pg_dump"
        : event.phase === "snapshot"
          ? `${event.done + 1}/${event.total}`
          : `${Math.floor((100 * event.done) / Math.max(event.total, 1))}%`;
    process.stderr.write(`\r\x1b[K${event.phase} ${amount} ${event.entry}`);
  };
  return { onProgress, clear: () => process.stderr.write("\r\x1b[K") };
}

function renderCreated(report: BackupReport): string {
  const { manifest } = report;
  const kind = report.compressed ? "tar.gz" : "tar";
  const lines = [
    `backup ${report.id}: ${report.archive} (${formatBytes(report.archiveBytes)}, ${kind}) in ${(report.durationMs / 1000).toFixed(1)} s`,
    "",
    renderTable(manifest.databases, [
      { header: "ROLE", value: (d) => d.role },
      { header: "AGENT", value: (d) => d.agentId ?? "-" },
      { header: "BYTES", value: (d) => formatBytes(d.bytes), align: "right" },
      { header: "SHA256", value: (d) => d.sha256.slice(0, 12) },
      { header: "INTEGRITY", value: (d) => d.integrityCheck },
      { header: "PATH", value: (d) => d.homePath },
    ]),
    "",
    `files: ${manifest.files.length} (${formatBytes(manifest.files.reduce((sum, f) => sum + f.bytes, 0))})`,
  ];
  const cp = manifest.controlPlane;
  if (cp) {
    lines.push(
      `control plane: ${cp.server} (PostgreSQL ${cp.serverVersion}), ${formatBytes(cp.bytes)} of SQL, sha256 ${cp.sha256.slice(0, 12)}, as ${cp.archivePath}`,
    );
  }
  for (const skip of manifest.skipped) lines.push(`skipped ${skip.homePath}: ${skip.reason}`);
  return lines.join("\n");
}

const SHOWN_PROBLEMS = 5;

function renderProblems(report: VerifyReport, full: boolean): string[] {
  const bad = report.entries.filter((entry) => entry.status !== "ok").length;
  const shown = full ? report.problems : report.problems.slice(0, SHOWN_PROBLEMS);
  const lines = [
    `FAILED: ${report.problems.length} problem${report.problems.length === 1 ? "" : "s"}, ${bad} of ${report.entries.length} entries bad`,
    ...shown.map((p) => `  ${full ? p.message : truncate(cleanCell(p.message), 160)}`),
  ];
  const more = report.problems.length - shown.length;
  if (more > 0) lines.push(`  … and ${more} more (--full shows every problem whole)`);
  return lines;
}

function renderVerify(report: VerifyReport, full: boolean): string {
  if (report.entries.length === 0 && !report.ok) {
    return `not a backup archive: ${report.archive}: ${report.firstProblem}`;
  }
  const made = report.createdAt === null ? "" : ` made ${new Date(report.createdAt).toISOString()}`;
  const lines = [
    `archive: ${report.archive} (${report.compressed ? "tar.gz" : "tar"})`,
    `backup: ${report.backupId ?? "?"} of ${report.home ?? "?"}${made}`,
    "",
    renderTable(
      report.entries,
      [
        { header: "ENTRY", value: (e) => e.path, max: 40 },
        {
          header: "KIND",
          value: (e) =>
            e.kind === "database" ? `${e.role}${e.agentId ? `:${e.agentId}` : ""}` : e.kind,
          max: 16,
        },
        {
          header: "BYTES",
          value: (e) => (e.bytes === null ? "-" : formatBytes(e.bytes)),
          align: "right",
        },
        { header: "SHA256", value: (e) => e.sha256?.slice(0, 12) ?? "-" },
        { header: "SCHEMA", value: (e) => e.schemaVersion ?? "-", align: "right" },
        { header: "INTEGRITY", value: (e) => e.integrityCheck ?? "-", max: 24 },
        { header: "STATUS", value: (e) => e.status },
      ],
      { full },
    ),
    "",
  ];
  if (report.ok) lines.push(`ok: ${report.entries.length} entries verified`);
  else lines.push(...renderProblems(report, full));
  return lines.join("\n");
}

function renderRestored(report: RestoreReport): string {
  const lines = [
    `restored backup ${report.backupId} into ${report.home}: ${report.databases} databases, ${report.files} files (${formatBytes(report.bytes)})`,
    `agents: ${report.agents.join(", ") || "-"}`,
  ];
  const aside = report.movedAside[0];
  if (aside) lines.push(`the old home was moved aside, whole, into ${dirname(aside.to)}`);
  const cp = report.controlPlane;
  if (cp?.loadedInto)
    lines.push(`control plane: loaded into ${cp.loadedInto} (also kept in ${cp.file})`);
  else if (cp) {
    lines.push(
      `control plane: its dump is in ${cp.file}; load it into a new, empty database with:`,
      `  ${loadCommand(cp.file)}`,
      "  (or restore again with --control-plane <url>)",
    );
  }
  lines.push(`next: agentstate status --home ${report.home}`);
  return lines.join("\n");
}

function registerCreate(backup: Command): void {
  const command = backup
    .command("create")
    .description(
      "snapshot every database (VACUUM INTO) and archive them with the home's files and a manifest",
    )
    .option("--out <file>", "archive path (default: <home>/backups/<timestamp>.tar.gz)")
    .option("--no-compress", "write a plain .tar (faster, larger)")
    .option(
      "--control-plane <url>",
      "also pg_dump this PostgreSQL control plane into the archive (default: $AGENTSTATE_CONTROL_PLANE when it is a postgres:// URL; needs pg_dump no older than the server)",
    );
  addExamples(command, [
    "agentstate backup create",
    "agentstate backup create --control-plane postgres://agentstate@db/agentstate",
    "agentstate backup create --home ~/.agentstate --out /mnt/backups/agentstate.tar.gz",
    "agentstate backup create --no-compress --json",
  ]);
  addHomeOption(command);
  addJsonOption(command).action(async (options: CreateOptions) => {
    const progress = progressLine();
    let report: BackupReport;
    try {
      report = await createBackup(resolveHomePath(options.home), {
        out: options.out,
        compress: options.compress,
        onProgress: progress.onProgress,
        controlPlane: controlPlaneToDump(options.controlPlane),
      });
    } finally {
      progress.clear();
    }
    if (options.json) printJson(report);
    else {
      const notes = describeInterruptedRuns(report.interrupted).map((note) => `${note}\n`);
      process.stdout.write(`${notes.join("")}${renderCreated(report)}\n`);
    }
    const bad = report.manifest.databases.find((db) => db.integrityCheck !== "ok");
    if (bad) {
      throw new StateError(
        "E_CORRUPT",
        `the snapshot of ${bad.homePath} failed integrity_check (${bad.integrityCheck}); the archive was kept at ${report.archive}`,
      );
    }
  });
}

function registerVerify(backup: Command): void {
  const command = backup
    .command("verify <file>")
    .description(
      "re-hash every entry against the manifest, integrity_check every snapshot, and check that every cold session's archive and search rows (its agent's cold index) are there (in a private temp dir, removed after)",
    );
  command.option("--full", "show every problem and table cell whole");
  addExamples(command, [
    "agentstate backup verify ~/.agentstate/backups/<time>.tar.gz",
    "agentstate backup verify backup.tar.gz --full",
    "agentstate backup verify backup.tar.gz --json",
  ]);
  addJsonOption(command).action(async (file: string, options: VerifyOptions) => {
    const report = await verifyBackup(file);
    if (options.json) printJson(report);
    else process.stdout.write(`${renderVerify(report, options.full ?? false)}\n`);
    if (!report.ok) {
      const first = report.firstProblem ?? "";
      throw new StateError(
        "E_CORRUPT",
        `backup verification failed: ${options.full ? first : truncate(cleanCell(first), 200)}`,
        { details: { archive: report.archive } },
      );
    }
  });
}

function registerRestore(backup: Command): void {
  const command = backup
    .command("restore <file>")
    .description("verify an archive, then restore it into a new or empty home")
    .requiredOption("--home <dir>", "the home to restore into (new or empty, unless --force)")
    .option(
      "--force",
      "move the old home aside (into <home>/backups/replaced-<time>/) instead of refusing it; never applies to --control-plane",
    )
    .option(
      "--control-plane <url>",
      "load the archive's control-plane dump into this PostgreSQL database with psql, in one transaction; a database that already holds agentstate tables is always refused (without it, the dump is only written to <home>/control-plane.sql)",
    );
  addExamples(command, [
    "agentstate backup restore backup.tar.gz --home ~/.agentstate-restored",
    "agentstate backup restore backup.tar.gz --home ~/.agentstate --force",
    "agentstate backup restore backup.tar.gz --home ~/.agentstate --control-plane postgres://agentstate@db/agentstate_new",
  ]);
  addJsonOption(command).action(async (file: string, options: RestoreOptions) => {
    const report = await restoreBackup(file, {
      home: options.home,
      force: options.force ?? false,
      controlPlane: options.controlPlane,
    });
    if (options.json) printJson(report);
    else process.stdout.write(`${renderRestored(report)}\n`);
  });
}

// The store's largest page of runs; the list has no cursor, a larger --limit shows more.
const MAX_RUNS = 10_000;

function registerList(backup: Command): void {
  const command = backup
    .command("list")
    .description("backup runs recorded in the home, newest first")
    .option("--limit <n>", `at most this many runs (1 to ${MAX_RUNS})`, "20")
    .addHelpText(
      "after",
      "\nExamples:\n  agentstate backup list\n  agentstate backup list --limit 100 --json\n\nWhen more runs are recorded, the last line is `more: --limit <n>`.",
    );
  addHomeOption(command);
  addJsonOption(command).action((options: ListOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, MAX_RUNS);
    const notes = describeInterruptedRuns(withHome(options, false, settleInterruptedBackups));
    // Before the table (or, with --json, on stderr): the list shows them as interrupted already.
    for (const note of notes) (options.json ? process.stderr : process.stdout).write(`${note}\n`);
    const { rows: runs, more } = fetchPage(limit, MAX_RUNS, (count) =>
      listBackups(resolveHomePath(options.home), { limit: count }),
    );
    if (options.json) {
      printJson(runs);
      return;
    }
    const home = resolveHomePath(options.home);
    const table = renderTable(runs, [
      { header: "ID", value: (r) => r.id.slice(0, 8) },
      { header: "CREATED", value: (r) => new Date(r.createdAt).toISOString().slice(0, 19) },
      { header: "STATUS", value: (r) => r.status },
      { header: "DBS", value: (r) => r.databases ?? "-", align: "right" },
      { header: "FILES", value: (r) => r.files ?? "-", align: "right" },
      {
        header: "SIZE",
        value: (r) => (r.bytes === null ? "-" : formatBytes(r.bytes)),
        align: "right",
      },
      {
        header: "ARCHIVE",
        value: (r) => `${pathInHome(home, r.archive)}${r.archiveExists ? "" : " (gone)"}`,
      },
    ]);
    process.stdout.write(`${runs.length === 0 ? "no backups recorded" : table}\n`);
    const flags = more ? largerLimit(limit, MAX_RUNS) : null;
    if (flags !== null) process.stdout.write(moreLine(flags));
  });
}

function renderPruned(report: PruneReport, home: string): string {
  const verb = report.dryRun ? "would delete" : "deleted";
  const lines = [
    `kept ${report.kept.length} newest, ${verb} ${report.deleted.length} (${formatBytes(report.freedBytes)})`,
  ];
  for (const pruned of report.deleted) lines.push(`  ${verb} ${pathInHome(home, pruned.archive)}`);
  for (const outside of report.outside)
    lines.push(
      `  kept ${outside.archive}: outside ${home}/backups/, delete it yourself if unneeded`,
    );
  return lines.join("\n");
}

function registerPrune(backup: Command): void {
  const command = backup
    .command("prune")
    .description(
      "delete all but the newest archives of succeeded runs (pre-migration backups included)",
    )
    .requiredOption("--keep <n>", "how many of the newest archives to keep (at least 1)")
    .option("--dry-run", "show what would be deleted, delete nothing")
    .addHelpText(
      "after",
      "\nExamples:\n  agentstate backup prune --keep 5 --dry-run\n  agentstate backup prune --keep 5 --home ~/.agentstate --json\n\nOnly archives inside <home>/backups/ are deleted; runs stay recorded (backup list shows them as gone).",
    );
  addHomeOption(command);
  addJsonOption(command).action((options: PruneOptions) => {
    const keep = parseInteger("--keep", options.keep, 1, 1_000_000);
    const home = resolveHomePath(options.home);
    const report = pruneBackups(home, { keep, dryRun: options.dryRun ?? false });
    if (options.json) printJson(report);
    else process.stdout.write(`${renderPruned(report, home)}\n`);
  });
}

export function registerBackup(program: Command): void {
  const backup = program
    .command("backup")
    .description(
      "back up a home into one archive, verify an archive, restore one, list and prune runs",
    );
  addExamples(backup, [
    "agentstate backup create",
    "agentstate backup verify backup.tar.gz",
    "agentstate backup restore backup.tar.gz --home ~/.agentstate-restored",
    "agentstate backup prune --keep 5 --dry-run",
  ]);
  registerCreate(backup);
  registerVerify(backup);
  registerRestore(backup);
  registerList(backup);
  registerPrune(backup);
}
