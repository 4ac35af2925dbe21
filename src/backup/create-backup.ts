import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { StateError } from "../db/errors.js";
import { DIR_MODE, ensurePrivateDir } from "../db/files.js";
import { rejectUnknownOptions } from "../db/options.js";
import { openStateHome, StateHome } from "../home.js";
import type { BackupRunStore } from "../stores/global/backup-run-store.js";
import type { JsonValue } from "../stores/json.js";
import { captureHome } from "./capture-home.js";
import { type ControlPlaneDump, dumpControlPlane } from "./control-plane-dump.js";
import { BACKUPS_DIR } from "./home-files.js";
import {
  backupWorkPath,
  type InterruptedRun,
  partialArchivePath,
  settleInterruptedBackups,
} from "./interrupted-runs.js";
import { type BackupManifest, CONTROL_PLANE_ENTRY, CONTROL_PLANE_HOME_PATH } from "./manifest.js";
import { placeNewFile } from "./options.js";
import { pgTarget } from "./pg-tools.js";
import { SnapshotChecker } from "./snapshot-check.js";
import { writeArchive } from "./write-archive.js";

export interface BackupProgress {
  /**
   * `snapshot`: `done`/`total` count databases (an agent's cold index, snapshotted right after
   * it, counts as its agent); `archive`: they count bytes written; `dump`: the control plane's
   * pg_dump is running (0 of 1).
   */
  phase: "dump" | "snapshot" | "archive";
  /** The home path of the database or file being worked on. */
  entry: string;
  done: number;
  total: number;
}

export interface CreateBackupOptions {
  /** Archive path (default `<home>/backups/<timestamp>.tar.gz`); an existing file is refused. */
  out?: string;
  /** gzip the archive (default true). */
  compress?: boolean;
  /** Progress, e.g. for a TTY display. A `snapshot` event comes just before that snapshot starts. */
  onProgress?: (event: BackupProgress) => void;
  /**
   * A PostgreSQL control plane (`postgres://` URL) to dump into the archive with `pg_dump`, first,
   * before the home's snapshots. Its password is passed to pg_dump through PGPASSWORD and written
   * nowhere. No default: the CLI reads `$AGENTSTATE_CONTROL_PLANE`, the library does not.
   */
  controlPlane?: string;
}

export interface BackupReport {
  id: string;
  archive: string;
  createdAt: number;
  durationMs: number;
  compressed: boolean;
  archiveBytes: number;
  /** Every snapshot passed `PRAGMA integrity_check`. */
  ok: boolean;
  manifest: BackupManifest;
  /** Earlier backup runs found killed before this one started, now marked interrupted. */
  interrupted: InterruptedRun[];
}

interface CheckedOptions {
  out: string | undefined;
  compress: boolean;
  onProgress: (event: BackupProgress) => void;
  controlPlane: string | undefined;
}

function checkOptions(options: CreateBackupOptions): CheckedOptions {
  rejectUnknownOptions(options, ["out", "compress", "onProgress", "controlPlane"], "createBackup");
  const { out, compress = true, onProgress = () => undefined, controlPlane } = options;
  // Checked before any run is recorded: a malformed URL is the caller's mistake, not a failed backup.
  if (controlPlane !== undefined) pgTarget(controlPlane, "createBackup({ controlPlane })");
  if (out !== undefined && (typeof out !== "string" || out === "")) {
    throw new TypeError("Expected createBackup({ out }) to be a non-empty string");
  }
  if (typeof compress !== "boolean")
    throw new TypeError("Expected createBackup({ compress }) to be a boolean");
  if (typeof onProgress !== "function") {
    throw new TypeError("Expected createBackup({ onProgress }) to be a function");
  }
  return { out, compress, onProgress, controlPlane };
}

function outputPath(home: StateHome, options: CheckedOptions, createdAt: number): string {
  let path: string;
  if (options.out === undefined) {
    const dir = join(home.path, BACKUPS_DIR);
    ensurePrivateDir(dir);
    const stamp = new Date(createdAt).toISOString().replace(/[:.]/g, "-");
    path = join(dir, `${stamp}.tar${options.compress ? ".gz" : ""}`);
  } else {
    path = resolve(options.out);
    // Only directories this creates are made private; an existing one is the operator's to keep.
    mkdirSync(dirname(path), { recursive: true, mode: DIR_MODE });
  }
  if (existsSync(path)) {
    throw new StateError("E_CONFLICT", `${path} already exists; choose another --out`, {
      details: { path },
    });
  }
  return path;
}

/** Marks the run failed; the original failure stays the one reported, even if this fails too. */
function recordFailure(runs: BackupRunStore, id: string, error: unknown): void {
  const code = error instanceof StateError ? error.code : "E_INTERNAL";
  const message = error instanceof Error ? error.message : String(error);
  try {
    runs.finish(id, "failed", { error: { code, message } });
  } catch {
    // Already failing; a second error here would hide the first.
  }
}

interface Run {
  id: string;
  createdAt: number;
  archive: string;
  /** Private directory for the snapshots, beside the archive (same filesystem, no tmpfs limits). */
  work: string;
  /** The archive while it is written; renamed to `archive` only when complete and synced. */
  partial: string;
}

/**
 * The control plane goes first: an unreachable server or a missing pg_dump fails the backup
 * before it spends minutes snapshotting agents.
 */
async function dumpFirst(run: Run, options: CheckedOptions): Promise<ControlPlaneDump | null> {
  if (options.controlPlane === undefined) return null;
  options.onProgress({ phase: "dump", entry: CONTROL_PLANE_ENTRY, done: 0, total: 1 });
  return dumpControlPlane(options.controlPlane, join(run.work, "control-plane.sql"));
}

async function writeBackup(
  home: StateHome,
  run: Run,
  options: CheckedOptions,
  checker: SnapshotChecker,
): Promise<BackupManifest> {
  const dump = await dumpFirst(run, options);
  // This backup's own dump supersedes a dump an earlier restore left in the home.
  const oldDump = join(home.path, CONTROL_PLANE_HOME_PATH);
  const superseded = dump !== null && existsSync(oldDump);
  const capture = captureHome({
    home,
    work: run.work,
    exclude: [run.archive, run.partial, run.work, ...(superseded ? [oldDump] : [])],
    checker,
    onSnapshot: (entry, done, total) =>
      options.onProgress({ phase: "snapshot", entry, done, total }),
  });
  const meta = { id: run.id, createdAt: run.createdAt, home: home.path, gzip: options.compress };
  if (superseded) {
    capture.skipped.push({
      homePath: CONTROL_PLANE_HOME_PATH,
      reason: "superseded by this backup's own dump of the control plane",
    });
  }
  const manifest = await writeArchive(run.partial, capture, {
    ...meta,
    onProgress: options.onProgress,
    controlPlane: dump,
  });
  placeNewFile(run.partial, run.archive);
  return manifest;
}

async function backupHome(home: StateHome, options: CheckedOptions): Promise<BackupReport> {
  const started = performance.now();
  const interrupted = settleInterruptedBackups(home);
  const createdAt = Date.now();
  const id = randomUUID();
  const archive = outputPath(home, options, createdAt);
  const runs = home.backups;
  // Recorded before anything is written, so a run killed from here on is found and cleaned by
  // the next backup: its leftovers are named after the run.
  runs.start(id, createdAt, archive);
  const work = backupWorkPath(archive, id);
  mkdirSync(work, { mode: DIR_MODE });
  const partial = partialArchivePath(archive, id);
  // Without compression a backup waits for its largest snapshot's check, so that check is split
  // over two threads (on a 200 MB database and two cores, 0.31-0.36 s after the snapshot instead of
  // 0.45 s). With gzip, compressing outlasts the whole check on one thread.
  const checker = new SnapshotChecker(options.compress ? { threads: 1 } : {});
  try {
    const run = { id, createdAt, archive, work, partial };
    const manifest = await writeBackup(home, run, options, checker);
    // Its leftovers go before the run is recorded as done: a run killed in between is still
    // `running`, and the next backup command removes what it left (settleInterruptedBackups
    // looks at running runs only). The snapshots are read and checked by now; the check threads
    // close the unlinked files at `checker.close()`.
    rmSync(work, { recursive: true, force: true });
    runs.finish(id, "succeeded", manifest as unknown as JsonValue);
    return {
      id,
      archive,
      createdAt,
      durationMs: Math.round(performance.now() - started),
      compressed: options.compress,
      archiveBytes: statSync(archive).size,
      ok: manifest.databases.every((db) => db.integrityCheck === "ok"),
      manifest,
      interrupted,
    };
  } catch (error) {
    rmSync(partial, { force: true });
    rmSync(work, { recursive: true, force: true });
    recordFailure(runs, id, error);
    throw error;
  } finally {
    // Last: the check threads then close the deleted snapshots, and freeing their pages (tens of
    // milliseconds per 200 MB) slows nothing the backup still has to do, such as recording the run.
    checker.close();
  }
}

/**
 * Backs up a home into one archive: a `VACUUM INTO` snapshot of every database (global, each
 * agent, any other SQLite file), the home's other files (config, credentials, workspaces, legacy
 * files; never `backups/`, live WAL/SHM files or symbolic links), and a `manifest.json` with the
 * size, SHA-256, schema version and `integrity_check` of each entry. Writers in other processes
 * keep going; each database's snapshot holds what was committed when its snapshot began. The
 * archive appears at its final path only when complete and on disk. Recorded in `backup_runs`.
 * With `controlPlane`, the archive also carries that PostgreSQL database's `pg_dump`
 * (`control-plane/postgres.sql`); a dump that fails fails the backup.
 */
export async function createBackup(
  home: StateHome | string,
  options: CreateBackupOptions = {},
): Promise<BackupReport> {
  const checked = checkOptions(options);
  if (typeof home !== "string" && !(home instanceof StateHome)) {
    throw new TypeError("Expected createBackup(home) to be a StateHome or a home path");
  }
  const owned = typeof home === "string" ? openStateHome({ home, create: false }) : null;
  try {
    return await backupHome(owned ?? (home as StateHome), checked);
  } finally {
    owned?.close();
  }
}
