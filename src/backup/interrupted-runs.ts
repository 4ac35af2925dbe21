import { lstatSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { processOwnerAlive } from "../db/process-owner.js";
import type { StateHome } from "../home.js";

/** A run found `running` whose process is gone, now marked `interrupted`. */
export interface InterruptedRun {
  kind: "backup" | "migration";
  id: string;
  pid: number;
  /** Leftover files and folders of the run that were removed. */
  removed: number;
}

/** The archive a backup writes before it is complete: renamed to `archive` only when it is. */
export function partialArchivePath(archive: string, runId: string): string {
  return `${archive}.tmp-${runId}`;
}

/** The private folder of a backup's snapshots, beside its archive (same filesystem). */
export function backupWorkPath(archive: string, runId: string): string {
  return join(dirname(archive), `.agentstate-backup-${runId}`);
}

function removeIfThere(path: string): number {
  try {
    lstatSync(path);
  } catch {
    return 0;
  }
  rmSync(path, { recursive: true, force: true });
  return 1;
}

/**
 * Marks every `running` backup run whose process is gone as `interrupted` and removes what it left
 * (its partial archive and its snapshot folder). A complete archive is kept: it was renamed into
 * place only once written and synced. Runs recorded without an owner cannot be judged and stay.
 * One query when nothing is running, so the commands that open a home for backups can afford it.
 */
export function settleInterruptedBackups(home: StateHome): InterruptedRun[] {
  const found: InterruptedRun[] = [];
  for (const run of home.backups.running()) {
    if (run.owner === null || processOwnerAlive(run.owner)) continue;
    const removed =
      removeIfThere(partialArchivePath(run.archivePath, run.id)) +
      removeIfThere(backupWorkPath(run.archivePath, run.id));
    const note = `process ${run.owner.pid} ended before the backup did`;
    if (home.backups.finish(run.id, "interrupted", { interrupted: note }))
      found.push({ kind: "backup", id: run.id, pid: run.owner.pid, removed });
  }
  return found;
}

const KIND_NAMES = { backup: "backup", migration: "doctor" } as const;

/**
 * One line per kind, e.g. `found 1 interrupted backup run (pid 1234, gone): marked interrupted,
 * removed 2 leftover files`.
 */
export function describeInterruptedRuns(runs: readonly InterruptedRun[]): string[] {
  const lines: string[] = [];
  for (const kind of ["migration", "backup"] as const) {
    const ofKind = runs.filter((run) => run.kind === kind);
    if (ofKind.length === 0) continue;
    const pids = [...new Set(ofKind.map((run) => run.pid))].join(", ");
    const removed = ofKind.reduce((sum, run) => sum + run.removed, 0);
    const plural = ofKind.length === 1 ? "" : "s";
    const files = removed === 1 ? "1 leftover file" : `${removed} leftover files`;
    lines.push(
      `found ${ofKind.length} interrupted ${KIND_NAMES[kind]} run${plural} (pid ${pids}, gone): marked interrupted${kind === "backup" ? `, removed ${files}` : ""}`,
    );
  }
  return lines;
}
