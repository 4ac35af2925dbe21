import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { StateError } from "../db/errors.js";
import { type ArchiveScan, scanArchive } from "./archive-scan.js";
import { uncoveredClaims } from "./cold-index-coverage.js";
import {
  isSnapshotEntry,
  judgeArchive,
  type VerifiedEntry,
  type VerifyProblem,
} from "./judge-archive.js";
import { type BackupManifest, CONTROL_PLANE_ENTRY, FILES_DIR } from "./manifest.js";
import { type SnapshotCheck, SnapshotChecker } from "./snapshot-check.js";

export interface VerifyReport {
  archive: string;
  /** True when every entry is present, expected and intact and every snapshot checks out. */
  ok: boolean;
  compressed: boolean;
  backupId: string | null;
  createdAt: number | null;
  /** The home the archive was made from. */
  home: string | null;
  /** Every archive entry in archive order, then the manifest's entries missing from the archive. */
  entries: VerifiedEntry[];
  problems: VerifyProblem[];
  /** The first problem's message (damage first, then entries in archive order), or null. */
  firstProblem: string | null;
}

export interface Inspection {
  report: VerifyReport;
  manifest: BackupManifest | null;
  scan: ArchiveScan;
}

/** Resolves an archive path, refusing a missing or non-file path (misuse, not a bad archive). */
export function archivePath(file: unknown, where: string): string {
  if (typeof file !== "string" || file === "") {
    throw new TypeError(`Expected ${where}(file) to be a non-empty path`);
  }
  const path = resolve(file);
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    throw new StateError("E_NOT_FOUND", `no backup archive at ${path}`, { details: { path } });
  }
  if (!isFile) {
    throw new StateError("E_INVALID_ARGUMENT", `${path} is not a file`, { details: { path } });
  }
  return path;
}

/**
 * Reads an archive into `stagingDir` (snapshots always, since SQLite checks files; the other
 * files and the control plane's dump only with `stageFiles`), checks each snapshot as soon as it is out, and judges the lot.
 */
export async function inspectArchive(
  archive: string,
  stagingDir: string,
  options: { stageFiles: boolean; durable: boolean },
): Promise<Inspection> {
  const checker = new SnapshotChecker();
  const pending = new Map<string, Promise<SnapshotCheck>>();
  try {
    const scan = await scanArchive(archive, {
      stagingDir,
      durable: options.durable,
      stage: (path) =>
        isSnapshotEntry(path) ||
        (options.stageFiles && (path.startsWith(`${FILES_DIR}/`) || path === CONTROL_PLANE_ENTRY)),
      onStaged: (entry) => {
        if (isSnapshotEntry(entry.path) && entry.stagedPath) {
          pending.set(entry.path, checker.check(entry.stagedPath));
        }
      },
    });
    const checks = new Map<string, SnapshotCheck>();
    for (const [path, check] of pending) checks.set(path, await check);
    const staged = new Map(scan.entries.map((entry) => [entry.path, entry.stagedPath]));
    const { manifest, entries, problems } = judgeArchive(scan, checks, (entry, claims) => {
      const path = staged.get(entry);
      if (!path) throw new Error("it was not staged");
      return uncoveredClaims(path, claims);
    });
    const report: VerifyReport = {
      archive,
      ok: problems.length === 0,
      compressed: scan.compressed,
      backupId: manifest?.backupId ?? null,
      createdAt: manifest?.createdAt ?? null,
      home: manifest?.home ?? null,
      entries,
      problems,
      firstProblem: problems[0]?.message ?? null,
    };
    return { report, manifest, scan };
  } finally {
    checker.close();
  }
}

/**
 * Verifies a backup archive: re-hashes every entry against the manifest, refuses unsafe entries
 * (absolute or `..` paths, links), opens every snapshot and runs `PRAGMA integrity_check`, and
 * checks schema versions. A bad archive is a report with `ok: false`, never an exception; a
 * missing file is `E_NOT_FOUND`. Snapshots are checked in a private temporary directory (under
 * `$TMPDIR`), removed before this returns; nothing else is written.
 */
export async function verifyBackup(file: string): Promise<VerifyReport> {
  const archive = archivePath(file, "verifyBackup");
  const work = mkdtempSync(join(tmpdir(), "agentstate-verify-"));
  try {
    return (await inspectArchive(archive, work, { stageFiles: false, durable: false })).report;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
