import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { isStateError, StateError } from "../db/errors.js";
import { refuseHeldHome } from "../db/file-holders.js";
import { DIR_MODE, ensurePrivateDir, FILE_MODE } from "../db/files.js";
import { rejectUnknownOptions } from "../db/options.js";
import {
  beginRestoreWork,
  commitRestore,
  RESTORE_WORK_DIR,
  RESTORED_TREE,
  type RestoreJournal,
  settlePendingRestore,
} from "../db/pending-restore.js";
import { openStateHome, resolveHomePath, type StateHome } from "../home.js";
import type { JsonValue } from "../stores/json.js";
import {
  type ControlPlaneLoader,
  loadCommand,
  prepareControlPlaneLoad,
} from "./control-plane-load.js";
import { BACKUPS_DIR } from "./home-files.js";
import type { BackupManifest } from "./manifest.js";
import { syncDir } from "./options.js";
import { pgTarget } from "./pg-tools.js";
import {
  blockers,
  describePaths,
  existingDatabases,
  planRestore,
  type RestoreItem,
} from "./restore-plan.js";
import { archivePath, inspectArchive, type VerifyReport } from "./verify-backup.js";

export interface RestoreBackupOptions {
  /** The home to restore into: new, empty, or (with `force`) one whose contents are moved aside. */
  home: string;
  /** Move the old home aside (into `backups/replaced-<time>/`) instead of refusing one with databases or colliding files. */
  force?: boolean;
  /**
   * A PostgreSQL database (`postgres://` URL) to load the archive's control-plane dump into, with
   * psql in one transaction. It must hold no agentstate control plane yet: one that does is
   * refused (`E_CONFLICT`), even with `force`, before the home is touched.
   */
  controlPlane?: string;
}

export interface RestoredControlPlane {
  /** The dump, written into the restored home (0600). */
  file: string;
  /** The server it was loaded into (`user@host:port/database`), or null when not loaded. */
  loadedInto: string | null;
}

export interface MovedAside {
  from: string;
  to: string;
}

export interface RestoreReport {
  archive: string;
  home: string;
  backupId: string;
  databases: number;
  files: number;
  bytes: number;
  /** The agents the restored home registers (each opened once to prove it). */
  agents: string[];
  movedAside: MovedAside[];
  /** The control plane's dump, when the archive carries one. */
  controlPlane: RestoredControlPlane | null;
  verify: VerifyReport;
}

function conflict(target: string, what: string, paths: readonly string[]): StateError {
  return new StateError(
    "E_CONFLICT",
    `${target} already has ${what} (${describePaths(target, paths)}); restore into a new or empty home, or pass --force to move the old home aside (into ${BACKUPS_DIR}/replaced-<time>/)`,
    { details: { home: target, paths } },
  );
}

/** Renames each staged file to `tree/<homePath>`, making every directory on the way private. */
function placeItems(tree: string, items: readonly RestoreItem[]): void {
  chmodSync(tree, DIR_MODE);
  const dirs = new Set<string>([tree]);
  for (const item of items) {
    const dest = join(tree, ...item.homePath.split("/"));
    const dir = dirname(dest);
    if (!dirs.has(dir)) {
      ensurePrivateDir(dir);
      for (let up = dir; up !== tree && up.startsWith(tree); up = dirname(up))
        chmodSync(up, DIR_MODE);
      dirs.add(dir);
    }
    chmodSync(item.staged, FILE_MODE);
    renameSync(item.staged, dest);
  }
  for (const dir of dirs) syncDir(dir);
}

/** Opens the restored home and every agent database, and closes the archive's own backup run. */
function openRestored(target: string, manifest: BackupManifest): string[] {
  let home: StateHome;
  try {
    home = openStateHome({ home: target, create: false });
  } catch (error) {
    throw new StateError(
      isStateError(error) ? error.code : "E_IO",
      `restored ${target}, but it does not open: ${(error as Error).message}`,
      { cause: error, details: { home: target } },
    );
  }
  try {
    const agents = home.listAgents().map((agent) => agent.agentId);
    for (const agentId of agents) home.agent(agentId, { create: false });
    // The global snapshot was taken while this very backup was still `running`.
    home.backups.finish(manifest.backupId, "succeeded", manifest as unknown as JsonValue);
    return agents;
  } finally {
    home.close();
  }
}

interface CheckedOptions {
  home: string;
  force: boolean;
  controlPlane: string | undefined;
}

function checkOptions(options: RestoreBackupOptions): CheckedOptions {
  rejectUnknownOptions(options, ["home", "force", "controlPlane"], "restoreBackup");
  const { home, force = false, controlPlane } = options;
  if (typeof home !== "string" || home === "") {
    throw new TypeError("Expected restoreBackup({ home }) to be a non-empty path");
  }
  if (typeof force !== "boolean")
    throw new TypeError("Expected restoreBackup({ force }) to be a boolean");
  if (controlPlane !== undefined) pgTarget(controlPlane, "restoreBackup({ controlPlane })");
  return { home: resolveHomePath(home), force, controlPlane };
}

/** The old home's top-level entries that a forced restore moves aside, all but `backups/`. */
function oldEntries(target: string): string[] {
  return readdirSync(target)
    .filter((name) => name !== BACKUPS_DIR && name !== RESTORE_WORK_DIR)
    .sort();
}

/** Where a forced restore puts the old home: inside `backups/`, which backups never carry. */
function asideDir(target: string): string {
  const backups = join(target, BACKUPS_DIR);
  if (existsSync(backups)) {
    const stat = lstatSync(backups);
    if (!stat.isDirectory() || stat.dev !== lstatSync(target).dev) {
      throw new StateError(
        "E_PATH",
        `${backups} is not a directory on the home's filesystem, so the old home cannot be moved aside into it`,
        { details: { path: backups } },
      );
    }
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return `${BACKUPS_DIR}/replaced-${stamp}`;
}

/** Verifies the archive into the work directory and builds the restored tree there. */
async function stage(archive: string, work: string) {
  const { report, manifest, scan } = await inspectArchive(archive, join(work, "archive"), {
    stageFiles: true,
    durable: true,
  });
  if (!report.ok || !manifest) {
    throw new StateError("E_CORRUPT", `refusing to restore ${archive}: ${report.firstProblem}`, {
      details: { archive, problems: report.problems },
    });
  }
  const items = planRestore(manifest, scan);
  const tree = join(work, RESTORED_TREE);
  mkdirSync(tree, { mode: DIR_MODE });
  placeItems(tree, items);
  return { report, manifest, items };
}

/** Decides what the commit moves aside: with `force` the whole old home, else nothing may collide. */
function journalFor(target: string, items: readonly RestoreItem[], force: boolean): RestoreJournal {
  const names = oldEntries(target);
  if (force) {
    if (names.length === 0) return { aside: null, moveAside: [] };
    return { aside: asideDir(target), moveAside: names };
  }
  const databases = existingDatabases(target);
  if (databases.length > 0) throw conflict(target, "databases", databases);
  const inTheWay = blockers(target, items);
  if (inTheWay.length > 0) throw conflict(target, "files the backup would replace", inTheWay);
  return { aside: null, moveAside: [] };
}

function summarize(
  archive: string,
  target: string,
  manifest: BackupManifest,
  items: readonly RestoreItem[],
  journal: RestoreJournal,
  verify: VerifyReport,
): RestoreReport {
  const agents = openRestored(target, manifest);
  const entries = [...manifest.databases, ...manifest.files];
  const aside = journal.aside === null ? null : join(target, ...journal.aside.split("/"));
  return {
    archive,
    home: target,
    backupId: manifest.backupId,
    databases: items.filter((item) => item.isDatabase).length,
    files: items.filter((item) => !item.isDatabase).length,
    bytes: entries.reduce((sum, entry) => sum + entry.bytes, 0),
    agents,
    movedAside: aside
      ? journal.moveAside.map((name) => ({ from: join(target, name), to: join(aside, name) }))
      : [],
    controlPlane: manifest.controlPlane
      ? { file: join(target, manifest.controlPlane.homePath), loadedInto: null }
      : null,
    verify,
  };
}

function noDump(archive: string, server: string): StateError {
  return new StateError(
    "E_INVALID_ARGUMENT",
    `${archive} carries no control-plane dump to load into ${server}; drop --control-plane`,
    { details: { archive } },
  );
}

/** The home is restored by now; a failed load leaves the database unchanged (one transaction). */
async function loadRestored(loader: ControlPlaneLoader, restored: RestoredControlPlane) {
  try {
    await loader.load(restored.file);
  } catch (error) {
    throw new StateError(
      "E_IO",
      `the home was restored, but the control plane was not loaded (the database is unchanged): ${(error as Error).message}; once fixed, run: ${loadCommand(restored.file)}`,
      { cause: error, details: { file: restored.file, server: loader.server } },
    );
  }
  restored.loadedInto = loader.server;
}

/** Makes the target (and missing parents) private; returns the topmost directory it created. */
function prepareTarget(target: string): string | undefined {
  const created = mkdirSync(target, { recursive: true, mode: DIR_MODE });
  chmodSync(target, DIR_MODE);
  return created;
}

/**
 * Restores a home from an archive. The archive is verified first, in full, into a private work
 * directory inside the target (so every move is a rename on one filesystem); a bad archive leaves
 * the target as it was. A target that has databases or files where restored ones go is refused
 * unless `force`, which moves the whole old home aside into `backups/replaced-<time>/` (never
 * deleting anything); a home another process has open is always refused, naming the process.
 * The switch is committed by a journal: a crash at any point leaves the old home, or the restored
 * one once the next open (or restore) finishes the switch. Directories end up 0700, files 0600;
 * the restored home is opened, with every agent database, before this returns. An archive's
 * control-plane dump is restored as `<home>/control-plane.sql`; with `controlPlane` it is then
 * loaded into that (empty) PostgreSQL database.
 */
export async function restoreBackup(
  file: string,
  options: RestoreBackupOptions,
): Promise<RestoreReport> {
  const { home: target, force, controlPlane } = checkOptions(options);
  const archive = archivePath(file, "restoreBackup");
  const loader = controlPlane === undefined ? null : await prepareControlPlaneLoad(controlPlane);
  if (existsSync(target)) settlePendingRestore(target);
  const existing = existingDatabases(target);
  if (existing.length > 0 && !force) throw conflict(target, "databases", existing);
  // Another process with a file of the home open would go on writing into the moved-aside copy.
  refuseHeldHome(target, "restore");
  const created = prepareTarget(target);
  let restored = false;
  const work = beginRestoreWork(target);
  try {
    const { report, manifest, items } = await stage(archive, work);
    if (loader && !manifest.controlPlane) throw noDump(archive, loader.server);
    const journal = journalFor(target, items, force);
    refuseHeldHome(target, "restore");
    commitRestore(target, journal);
    restored = true;
    const summary = summarize(archive, target, manifest, items, journal, report);
    if (loader && summary.controlPlane) await loadRestored(loader, summary.controlPlane);
    return summary;
  } finally {
    if (!restored) {
      rmSync(work, { recursive: true, force: true });
      // A refused restore leaves no trace, not even the directories it made for the target.
      if (created) rmSync(created, { recursive: true, force: true });
    }
  }
}
