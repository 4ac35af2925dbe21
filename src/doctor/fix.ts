import { randomBytes } from "node:crypto";
import { existsSync, rmSync, statfsSync, statSync } from "node:fs";
import type { InterruptedRun } from "../backup/interrupted-runs.js";
import { StateError } from "../db/errors.js";
import { openStateHome, type StateHome } from "../home.js";
import type {
  MigrationLedgerStore,
  MigrationSourceStatus,
} from "../stores/global/migration-ledger-store.js";
import type { JsonValue } from "../stores/json.js";
import { type IndexedSource, importGroups } from "./import-groups.js";
import { settleInterruptedRunsAt } from "./interrupted-runs.js";
import { KIND_HANDLERS } from "./kinds/registry.js";
import { type ImportOutcome, MAX_LISTED_PROBLEMS, type SourceProblem } from "./kinds/types.js";
import { type MigrationPlan, type PlannedSource, planImport } from "./plan.js";
import { preMigrationBackup } from "./pre-migration-backup.js";
import { quarantineProblems } from "./quarantine.js";

export type SourceStatus = MigrationSourceStatus | "left" | "refused";

export interface SourceReport {
  path: string;
  kind: string;
  agentId: string | null;
  targetTable: string | null;
  status: SourceStatus;
  records: number;
  alreadyPresent: number;
  sha256: string | null;
  error: string | null;
  problems: SourceProblem[];
  /** Warnings that lose nothing: the source still completes (a header naming another id, …). */
  notes: string[];
  /** Lines of this source kept in `migration_quarantine` by this run (`--quarantine`). */
  quarantined: number;
  removed: boolean;
}

export interface DoctorReport {
  runId: string | null;
  status: "succeeded" | "partial" | "failed" | "interrupted" | "nothing-to-do";
  home: string;
  backupPath: string | null;
  startedAt: number;
  finishedAt: number;
  sources: SourceReport[];
  totals: {
    imported: number;
    skipped: number;
    warning: number;
    failed: number;
    records: number;
    quarantined: number;
  };
  /** Earlier runs found killed (their process gone), now marked interrupted. */
  interrupted: InterruptedRun[];
}

export interface DoctorProgress {
  source: PlannedSource;
  index: number;
  total: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface FixOptions {
  home?: string;
  /** Leave imported source files in place instead of removing them. */
  keepSources?: boolean;
  /**
   * Keep each line that cannot be imported (broken JSON, invalid UTF-8, a refused record) as bytes
   * in `migration_quarantine`, so that its source counts as complete and is removed.
   */
  quarantine?: boolean;
  /** Makes the verified pre-migration backup and returns its path (default: a verified archive under `<home>/backups/`). */
  backup?: (home: StateHome) => Promise<string>;
  onProgress?: (progress: DoctorProgress) => void;
  /**
   * Stops the run between import groups (each group's rows are committed or not at all); the
   * run is then recorded as `interrupted` and a rerun picks up the sources not yet imported.
   */
  signal?: AbortSignal;
}

/** Refuses to start when the disk cannot hold the new rows and the backup (with 10% slack). */
export function checkFreeSpace(plan: MigrationPlan): void {
  const needed = Math.ceil((plan.estimate.databaseBytes + plan.estimate.backupBytes) * 1.1);
  const stats = statfsSync(plan.home);
  const free = stats.bavail * stats.bsize;
  if (free < needed) {
    throw new StateError(
      "E_IO",
      `not enough free disk space in ${plan.home}: the migration needs about ${needed} bytes (rows and backup), ${free} are free`,
      { details: { home: plan.home, needed, free } },
    );
  }
}

function newRunId(): string {
  return `doctor-${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(3).toString("hex")}`;
}

function reportOf(
  source: PlannedSource,
  status: SourceStatus,
  extra: Partial<SourceReport> = {},
): SourceReport {
  return {
    path: source.path,
    kind: source.kind,
    agentId: source.agentId,
    targetTable: source.targetTable,
    status,
    records: 0,
    alreadyPresent: 0,
    sha256: source.sha256,
    error: source.reason,
    problems: source.problems,
    notes: [],
    quarantined: 0,
    removed: false,
    ...extra,
  };
}

function importSource(home: StateHome, source: PlannedSource, plan: MigrationPlan): SourceReport {
  const handler = KIND_HANDLERS[source.kind];
  if (!handler) return reportOf(source, "left");
  let outcome: ImportOutcome;
  try {
    outcome = handler.import({ home, source, allSources: plan.sources });
  } catch (error) {
    return reportOf(source, "failed", {
      error: error instanceof Error ? error.message : String(error),
    });
  }
  const expected = source.records ?? 0;
  const complete = outcome.problems.length === 0 && outcome.records === expected;
  const error = complete
    ? null
    : outcome.problems.length > 0
      ? `${outcome.problems.length} record(s) could not be imported; the source is kept (doctor --fix --quarantine keeps such lines in the database and finishes the source)`
      : `imported ${outcome.records} records but the plan counted ${expected}; the source is kept`;
  return reportOf(source, complete ? "imported" : "warning", {
    records: outcome.records,
    alreadyPresent: outcome.alreadyPresent,
    // Every problem, for the quarantine; the report keeps the first ones (see `capProblems`).
    problems: outcome.problems,
    notes: outcome.notes ?? [],
    error,
  });
}

/**
 * SQLite puts the temp files of a large import (statement journals, sorts) in /var/tmp, outside
 * the home and its permissions and disk. In memory they stay inside the process; each is bounded
 * by one statement's changes. Set outside any transaction (SQLite refuses it inside one), again
 * for each group because the agent pool may have reopened the connection.
 */
function keepTempFilesInMemory(db: { exec(sql: string): void }): void {
  db.exec("PRAGMA temp_store = MEMORY");
}

/** Thrown inside a group's transaction to undo it when one of its sources failed. */
class GroupFailed extends Error {}

/**
 * Imports a group of sources (see import-groups.ts) and returns a report for each, in order. A
 * group of several shares one transaction; if any of them fails, or the commit does, the whole
 * group is rolled back and imported again one source at a time, so a bad file costs only itself.
 */
function importGroup(
  home: StateHome,
  group: readonly IndexedSource[],
  plan: MigrationPlan,
  bytesDone: number,
  progress: (source: PlannedSource, index: number, bytesBefore: number) => void,
): SourceReport[] {
  const importEach = (inGroup: boolean) => {
    let before = bytesDone;
    return group.map(({ source, index }) => {
      progress(source, index, before);
      before += source.bytes;
      const report = importSource(home, source, plan);
      if (inGroup && report.status === "failed") throw new GroupFailed(report.error ?? "failed");
      return report;
    });
  };
  const agentId = group[0]?.source.agentId;
  for (const { source } of group)
    if (source.agentId) keepTempFilesInMemory(home.agent(source.agentId).db);
  if (group.length === 1 || !agentId) return importEach(false);
  try {
    return home.agent(agentId).db.tx(() => importEach(true));
  } catch {
    return importEach(false);
  }
}

/**
 * True while the file is still the one the plan hashed and counted: same size and mtime. A writer
 * still running against the legacy home could otherwise add a line after the import read the
 * file and lose it when the file is removed.
 */
function unchangedSincePlan(source: PlannedSource): boolean {
  const stat = statSync(source.absPath, { throwIfNoEntry: false });
  return (
    stat !== undefined && stat.size === source.bytes && Math.trunc(stat.mtimeMs) === source.mtimeMs
  );
}

/** An imported source that changed while it was imported is kept, as a warning, for a rerun. */
function keepIfChanged(source: PlannedSource, report: SourceReport): SourceReport {
  if (report.status !== "imported" || unchangedSincePlan(source)) return report;
  return {
    ...report,
    status: "warning",
    error:
      "the file changed while it was imported (size or modification time differs from the plan); it is kept: run doctor --fix again once nothing writes to the legacy home",
  };
}

/**
 * With `--quarantine`, a source whose only fault is lines that could not be imported keeps those
 * lines as bytes in the global database and counts as complete; it is then removed like any other.
 */
function quarantineIfAsked(
  home: StateHome,
  runId: string,
  source: PlannedSource,
  report: SourceReport,
  asked: boolean,
): SourceReport {
  if (!asked || report.status !== "warning" || report.problems.length === 0) return report;
  const result = quarantineProblems(home, runId, source, report.records, report.problems);
  if (!result.ok) return { ...report, error: `${report.error}; not quarantined: ${result.reason}` };
  return { ...report, status: "imported", error: null, quarantined: result.lines };
}

/** The report and the ledger list the first problems; the quarantine has seen them all. */
function capProblems(report: SourceReport): SourceReport {
  if (report.problems.length <= MAX_LISTED_PROBLEMS) return report;
  return { ...report, problems: report.problems.slice(0, MAX_LISTED_PROBLEMS) };
}

/** Problems of every source of a run, by file and line, for the run's own record in the ledger. */
function runProblems(sources: readonly SourceReport[]): JsonValue[] {
  const listed: JsonValue[] = [];
  for (const s of sources) {
    if (s.status === "skipped" || s.status === "left") continue;
    if (s.problems.length === 0 && s.error && s.status !== "imported") {
      listed.push({ path: s.path, line: null, key: null, reason: s.error, quarantined: false });
    }
    for (const p of s.problems) {
      listed.push({ path: s.path, ...p, quarantined: s.quarantined > 0 && p.line !== null });
    }
  }
  return listed.slice(0, 1000);
}

/** Kinds whose writers took a `.lock` beside the file (the plan lists those locks as `lock`). */
const LOCKED_KINDS = new Set(["session-index", "transcript", "transcript-archive"]);

/**
 * The writer lock that guarded a source (`sessions.json.lock`, `<id>.jsonl.lock`; an archive's is
 * its live file's): stale once the source is imported, so it goes with it, and stays with a kept one.
 */
function lockOf(source: PlannedSource): string | null {
  if (!LOCKED_KINDS.has(source.kind)) return null;
  return `${source.absPath.replace(/\.jsonl\.(deleted|reset)\.[^/]+$/, ".jsonl")}.lock`;
}

function removeSource(source: PlannedSource): boolean {
  rmSync(source.absPath, { force: true });
  const lock = lockOf(source);
  if (lock !== null) rmSync(lock, { force: true });
  return !existsSync(source.absPath);
}

function record(
  ledger: MigrationLedgerStore,
  runId: string,
  source: PlannedSource,
  report: SourceReport,
): void {
  if (!source.sourceKey || report.status === "left" || report.status === "refused") return;
  ledger.recordSource({
    sourceKey: source.sourceKey,
    kind: source.kind,
    path: source.path,
    targetTable: source.targetTable ?? "",
    sha256: source.sha256 ?? "",
    sizeBytes: source.bytes,
    recordCount: report.records,
    lastRunId: runId,
    status:
      report.status === "imported" || report.status === "skipped" ? report.status : report.status,
    importedAt: report.status === "imported" || report.status === "warning" ? Date.now() : null,
    report: {
      alreadyPresent: report.alreadyPresent,
      error: report.error,
      problems: report.problems,
      notes: report.notes,
      quarantined: report.quarantined,
    } as {
      [key: string]: JsonValue;
    },
  });
}

function totalsOf(sources: readonly SourceReport[]): DoctorReport["totals"] {
  const totals = { imported: 0, skipped: 0, warning: 0, failed: 0, records: 0, quarantined: 0 };
  for (const s of sources) {
    if (
      s.status === "imported" ||
      s.status === "skipped" ||
      s.status === "warning" ||
      s.status === "failed"
    ) {
      totals[s.status]++;
    }
    if (s.status === "refused") totals.failed++;
    totals.records += s.records;
    totals.quarantined += s.quarantined;
  }
  return totals;
}

/**
 * The import is synchronous: a signal handler (which sets the abort) only runs when the event
 * loop gets a turn, so each group boundary gives it one before looking at the signal.
 */
async function stopRequested(signal: AbortSignal | undefined): Promise<boolean> {
  if (signal === undefined) return false;
  if (!signal.aborted) await new Promise<void>((resolve) => setImmediate(resolve));
  return signal.aborted;
}

/** Sources an interrupted run never reached: still in place, for the next run. */
function markNotReached(group: readonly IndexedSource[], reports: SourceReport[]): void {
  for (const { source, index } of group) {
    reports[index] = reportOf(source, "left", {
      error: "not imported: the run was interrupted; run doctor --fix again",
    });
  }
}

/**
 * `doctor --fix`: plan, check disk space, back up and verify, import each source (short
 * transcripts of one agent in groups sharing a transaction, any other in its own short
 * transactions), record every source in the ledger, and only then remove the sources
 * that imported completely. A failing source stays untouched; the others still import.
 */
export async function runDoctorFix(options: FixOptions): Promise<DoctorReport> {
  const startedAt = Date.now();
  const plan = planImport(options.home);
  const interrupted = settleInterruptedRunsAt(plan.home);
  const todo = plan.sources.filter((s) => s.action === "import");
  const reports = plan.sources.map((s) =>
    s.action === "skip"
      ? reportOf(s, "skipped", { records: s.records ?? 0 })
      : s.action === "refuse"
        ? reportOf(s, "refused")
        : s.action === "leave"
          ? reportOf(s, "left")
          : reportOf(s, "failed"),
  );
  if (todo.length === 0) {
    return {
      runId: null,
      status: "nothing-to-do",
      home: plan.home,
      backupPath: null,
      startedAt,
      finishedAt: Date.now(),
      sources: reports,
      totals: totalsOf(reports),
      interrupted,
    };
  }
  checkFreeSpace(plan);
  const home = openStateHome({ home: plan.home });
  keepTempFilesInMemory(home.db);
  try {
    const ledger = home.migrations;
    const runId = newRunId();
    // The backup comes first so that the archive holds the home exactly as it was before the run.
    const backupPath = await (options.backup ?? preMigrationBackup)(home);
    ledger.startRun(runId, { kind: "legacy-state", home: plan.home, planned: todo.length });
    const bytesTotal = todo.reduce((sum, s) => sum + s.bytes, 0);
    let bytesDone = 0;
    const progress = (source: PlannedSource, index: number, bytesBefore: number) =>
      options.onProgress?.({
        source,
        index,
        total: plan.sources.length,
        bytesDone: bytesBefore,
        bytesTotal,
      });
    let stopped = false;
    for (const group of importGroups(plan.sources)) {
      if (await stopRequested(options.signal)) {
        stopped = true;
        markNotReached(group, reports);
        continue;
      }
      const imported = importGroup(home, group, plan, bytesDone, progress);
      // Only now, with the group's rows committed, may a source be recorded and removed.
      for (const [i, { source, index }] of group.entries()) {
        const found = imported[i] as SourceReport;
        const settled = quarantineIfAsked(home, runId, source, found, options.quarantine === true);
        const report = keepIfChanged(source, capProblems(settled));
        record(ledger, runId, source, report);
        if (report.status === "imported" && !options.keepSources) {
          report.removed = removeSource(source);
          if (report.removed) ledger.markRemoved(source.sourceKey as string);
        }
        reports[index] = report;
        bytesDone += source.bytes;
      }
    }
    for (const { agentId } of home.listAgents()) {
      home.withAgent(agentId, ({ db }) => db.exec("PRAGMA optimize"));
    }
    const totals = totalsOf(reports);
    const status = stopped
      ? "interrupted"
      : totals.failed > 0 || totals.warning > 0
        ? "partial"
        : "succeeded";
    const summary = {
      kind: "legacy-state",
      home: plan.home,
      backupPath,
      totals,
      problems: runProblems(reports),
    } as {
      [key: string]: JsonValue;
    };
    ledger.finishRun(runId, status, summary);
    return {
      runId,
      status,
      home: plan.home,
      backupPath,
      startedAt,
      finishedAt: Date.now(),
      sources: reports,
      totals,
      interrupted,
    };
  } finally {
    home.close();
  }
}
