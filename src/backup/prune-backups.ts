import { realpathSync, rmSync } from "node:fs";
import { join, sep } from "node:path";
import { rejectUnknownOptions } from "../db/options.js";
import { openStateHome, StateHome } from "../home.js";
import { BACKUPS_DIR } from "./home-files.js";
import { archiveSize } from "./list-backups.js";

export interface PrunedArchive {
  id: string;
  createdAt: number;
  archive: string;
  bytes: number;
}

export interface PruneReport {
  /** The newest archives kept, newest first. */
  kept: PrunedArchive[];
  /** Older archives deleted (or, with `dryRun`, that would be). */
  deleted: PrunedArchive[];
  /** Older archives written outside `<home>/backups/` (`--out`): listed, never deleted. */
  outside: PrunedArchive[];
  freedBytes: number;
  dryRun: boolean;
}

export interface PruneBackupsOptions {
  /** How many of the newest succeeded archives to keep (at least 1). */
  keep: number;
  /** Report what would be deleted, delete nothing. */
  dryRun?: boolean;
}

function insideBackups(home: string, archive: string): boolean {
  try {
    const dir = realpathSync(join(home, BACKUPS_DIR));
    return realpathSync(archive).startsWith(`${dir}${sep}`);
  } catch {
    return false;
  }
}

function checkOptions(options: PruneBackupsOptions): { keep: number; dryRun: boolean } {
  rejectUnknownOptions(options, ["keep", "dryRun"], "pruneBackups");
  const { keep, dryRun = false } = options;
  if (!Number.isSafeInteger(keep) || keep < 1) {
    throw new TypeError(`Expected pruneBackups({ keep }) to be an integer ≥ 1, got ${keep}`);
  }
  if (typeof dryRun !== "boolean")
    throw new TypeError("Expected pruneBackups({ dryRun }) to be a boolean");
  return { keep, dryRun };
}

/**
 * Deletes all but the `keep` newest archives of succeeded backup runs (the pre-migration backups
 * `doctor --fix` makes count like any other). Only archives inside `<home>/backups/` are deleted:
 * one written elsewhere with `--out` is the operator's to manage. The runs stay recorded; `backup
 * list` shows their archives as gone.
 */
export function pruneBackups(home: StateHome | string, options: PruneBackupsOptions): PruneReport {
  const { keep, dryRun } = checkOptions(options);
  const owned = typeof home === "string" ? openStateHome({ home, create: false }) : null;
  const state = owned ?? (home as StateHome);
  if (!(state instanceof StateHome)) {
    throw new TypeError("Expected pruneBackups(home) to be a StateHome or a home path");
  }
  try {
    const archives: PrunedArchive[] = [];
    for (const run of state.backups.listAll()) {
      const bytes = run.status === "succeeded" ? archiveSize(run.archivePath) : null;
      if (bytes !== null)
        archives.push({ id: run.id, createdAt: run.createdAt, archive: run.archivePath, bytes });
    }
    const report: PruneReport = { kept: [], deleted: [], outside: [], freedBytes: 0, dryRun };
    for (const [index, archive] of archives.entries()) {
      if (index < keep) report.kept.push(archive);
      else if (!insideBackups(state.path, archive.archive)) report.outside.push(archive);
      else {
        if (!dryRun) rmSync(archive.archive, { force: true });
        report.deleted.push(archive);
        report.freedBytes += archive.bytes;
      }
    }
    return report;
  } finally {
    owned?.close();
  }
}
