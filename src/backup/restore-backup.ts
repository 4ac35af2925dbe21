import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { isStateError, StateError } from "../db/errors.js";
import { DIR_MODE, ensurePrivateDir, FILE_MODE } from "../db/files.js";
import { openStateHome, resolveHomePath, type StateHome } from "../home.js";
import type { JsonValue } from "../stores/json.js";
import type { BackupManifest } from "./manifest.js";
import { rejectUnknownOptions, syncDir } from "./options.js";
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
  /** Move existing databases and colliding files aside (`<name>.replaced-<time>`) instead of refusing. */
  force?: boolean;
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
  verify: VerifyReport;
}

const SIDECARS = ["", "-wal", "-shm", "-journal"];

function conflict(target: string, what: string, paths: readonly string[]): StateError {
  return new StateError(
    "E_CONFLICT",
    `${target} already has ${what} (${describePaths(target, paths)}); restore into a new or empty home, or pass --force to move them aside (renamed <name>.replaced-<time>)`,
    { details: { home: target, paths } },
  );
}

/** Renames each path (a database with its sidecars, so the pair still opens) out of the way. */
function moveAside(databases: readonly string[], others: readonly string[]): MovedAside[] {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const moved: MovedAside[] = [];
  const move = (from: string, to: string) => {
    renameSync(from, to);
    moved.push({ from, to });
  };
  for (const db of databases) {
    for (const suffix of SIDECARS) {
      if (existsSync(`${db}${suffix}`)) move(`${db}${suffix}`, `${db}.replaced-${stamp}${suffix}`);
    }
  }
  for (const path of others) move(path, `${path}.replaced-${stamp}`);
  return moved;
}

/** A rename, or a synced copy where the target is another filesystem (a mount point as home). */
function moveFile(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
    copyFileSync(from, to);
    const fd = openSync(to, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(to, FILE_MODE);
    rmSync(from);
  }
}

/** Renames each staged file to `root/<homePath>`, making every directory on the way private. */
function placeItems(root: string, items: readonly RestoreItem[]): void {
  chmodSync(root, DIR_MODE);
  const dirs = new Set<string>([root]);
  for (const item of items) {
    const dest = join(root, ...item.homePath.split("/"));
    const dir = dirname(dest);
    if (!dirs.has(dir)) {
      ensurePrivateDir(dir);
      for (let up = dir; up !== root && up.startsWith(root); up = dirname(up))
        chmodSync(up, DIR_MODE);
      dirs.add(dir);
    }
    chmodSync(item.staged, FILE_MODE);
    moveFile(item.staged, dest);
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

function checkOptions(options: RestoreBackupOptions): { home: string; force: boolean } {
  rejectUnknownOptions(options, ["home", "force"], "restoreBackup");
  const { home, force = false } = options;
  if (typeof home !== "string" || home === "") {
    throw new TypeError("Expected restoreBackup({ home }) to be a non-empty path");
  }
  if (typeof force !== "boolean")
    throw new TypeError("Expected restoreBackup({ force }) to be a boolean");
  return { home: resolveHomePath(home), force };
}

async function restoreFromStaging(
  archive: string,
  target: string,
  staging: string,
  force: boolean,
) {
  const { report, manifest, scan } = await inspectArchive(archive, staging, {
    stageFiles: true,
    durable: true,
  });
  if (!report.ok || !manifest) {
    throw new StateError("E_CORRUPT", `refusing to restore ${archive}: ${report.firstProblem}`, {
      details: { archive, problems: report.problems },
    });
  }
  const items = planRestore(manifest, scan);
  const databases = existingDatabases(target);
  const inTheWay = blockers(target, items).filter((path) => !databases.includes(path));
  if (!force && inTheWay.length > 0)
    throw conflict(target, "files the backup would replace", inTheWay);
  const movedAside = force ? moveAside(databases, inTheWay) : [];
  try {
    install(target, staging, items);
  } catch (error) {
    const aside = movedAside.map((moved) => moved.to);
    throw new StateError(
      "E_IO",
      `restore into ${target} failed while moving files into place: ${(error as Error).message}${aside.length > 0 ? `; the previous files are kept as ${describePaths(target, aside)}` : ""}`,
      { cause: error, details: { home: target, movedAside } },
    );
  }
  return { report, manifest, items, movedAside };
}

function install(target: string, staging: string, items: readonly RestoreItem[]): void {
  if (existsSync(target)) {
    placeItems(target, items);
    return;
  }
  // A new home appears in one rename, complete, or not at all.
  const tree = join(staging, "home");
  mkdirSync(tree, { mode: DIR_MODE });
  placeItems(tree, items);
  renameSync(tree, target);
  syncDir(dirname(target));
}

function summarize(
  archive: string,
  target: string,
  manifest: BackupManifest,
  items: readonly RestoreItem[],
  movedAside: MovedAside[],
  verify: VerifyReport,
): RestoreReport {
  const agents = openRestored(target, manifest);
  const entries = [...manifest.databases, ...manifest.files];
  return {
    archive,
    home: target,
    backupId: manifest.backupId,
    databases: items.filter((item) => item.isDatabase).length,
    files: items.filter((item) => !item.isDatabase).length,
    bytes: entries.reduce((sum, entry) => sum + entry.bytes, 0),
    agents,
    movedAside,
    verify,
  };
}

/**
 * Restores a home from an archive. The archive is verified first, in full, into a private staging
 * directory beside the target (so the final moves are renames on one filesystem); a bad archive
 * leaves the target untouched. A target that has databases is refused unless `force`, which moves
 * them (and any file in the way) aside instead of deleting them. Directories end up 0700, files
 * 0600; the restored home is opened, with every agent database, before this returns.
 */
export async function restoreBackup(
  file: string,
  options: RestoreBackupOptions,
): Promise<RestoreReport> {
  const { home: target, force } = checkOptions(options);
  const archive = archivePath(file, "restoreBackup");
  const existing = existingDatabases(target);
  if (existing.length > 0 && !force) throw conflict(target, "databases", existing);
  const createdParent = mkdirSync(dirname(target), { recursive: true, mode: DIR_MODE });
  const staging = mkdtempSync(join(dirname(target), ".agentstate-restore-"));
  let restored = false;
  try {
    const { report, manifest, items, movedAside } = await restoreFromStaging(
      archive,
      target,
      staging,
      force,
    );
    restored = true;
    return summarize(archive, target, manifest, items, movedAside, report);
  } finally {
    rmSync(staging, { recursive: true, force: true });
    // A refused restore leaves no trace, not even the parent directories it made for the target.
    if (!restored && createdParent) rmSync(createdParent, { recursive: true, force: true });
  }
}
