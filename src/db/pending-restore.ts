import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { StateError } from "./errors.js";
import { DIR_MODE, ensurePrivateDir, FILE_MODE } from "./files.js";
import { currentProcessOwner, type ProcessOwner, processOwnerAlive } from "./process-owner.js";

/**
 * A restore into an existing home is staged in this directory inside the home (so that every move
 * is a rename on one filesystem, even when the home is a mount point), then committed by writing a
 * journal there. From the journal on, the restore is finished by whoever comes next (the restore
 * itself, or any later open of the home), so a crash at any point leaves either the old home or,
 * once finished, the restored one: never a mix, never neither.
 */
export const RESTORE_WORK_DIR = ".agentstate-restore";
const OWNER_FILE = "owner";
const JOURNAL_FILE = "journal.json";
/** The verified tree of the restored home, inside the work directory. */
export const RESTORED_TREE = "home";

export interface RestoreJournal {
  /** Home-relative directory the old entries move to, or null when nothing is moved aside. */
  aside: string | null;
  /** Top-level names of the old home to move aside (never `backups` or the work directory). */
  moveAside: string[];
}

function workDir(home: string): string {
  return join(home, RESTORE_WORK_DIR);
}

/** `<pid> <start ticks>`, or `<pid> ?` where the start time cannot be read. */
function ownerToken(owner: ProcessOwner): string {
  return `${owner.pid} ${owner.started ?? "?"}`;
}

function ownerAlive(token: string): boolean {
  const [pidText = "", started = "?"] = token.trim().split(" ");
  return processOwnerAlive({
    pid: Number(pidText),
    started: started === "?" ? null : Number(started),
  });
}

function syncDirectory(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EINVAL" && code !== "EPERM") throw error;
  } finally {
    closeSync(fd);
  }
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw error;
  }
}

/**
 * Whether a restore left its work directory in the home. A process under Node's permission model
 * (a turn run with `permission: enforce`) may not look; the parent that started it opened the home
 * first, and that open settled any restore.
 */
function workDirPresent(dir: string): boolean {
  try {
    return lstatOrNull(dir) !== null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_ACCESS_DENIED") return false;
    throw error;
  }
}

/**
 * Moves every entry of `from` into `to`: whole where `to` lacks it, merged where both have a
 * directory. Each step is one rename of what is still left in `from`, so running it again after a
 * crash picks up exactly where the last run stopped.
 */
function mergeInto(from: string, to: string): void {
  for (const name of readdirSync(from).sort()) {
    const source = join(from, name);
    const dest = join(to, name);
    const there = lstatOrNull(dest);
    if (!there) {
      renameSync(source, dest);
    } else if (there.isDirectory() && lstatSync(source).isDirectory()) {
      chmodSync(dest, DIR_MODE);
      mergeInto(source, dest);
    } else {
      throw new StateError(
        "E_CONFLICT",
        `cannot finish the restore: ${dest} appeared where a restored file goes; move it away and open the home again`,
        { details: { path: dest } },
      );
    }
  }
  syncDirectory(to);
}

function applyJournal(home: string, journal: RestoreJournal): void {
  if (journal.aside !== null) {
    const aside = join(home, ...journal.aside.split("/"));
    ensurePrivateDir(aside);
    for (const name of journal.moveAside) {
      const from = join(home, name);
      if (lstatOrNull(from) && !lstatOrNull(join(aside, name))) renameSync(from, join(aside, name));
    }
    syncDirectory(aside);
  }
  const tree = join(workDir(home), RESTORED_TREE);
  if (existsSync(tree)) mergeInto(tree, home);
  chmodSync(home, DIR_MODE);
  syncDirectory(home);
  rmSync(workDir(home), { recursive: true, force: true });
}

function readJournal(path: string): RestoreJournal {
  const parsed = JSON.parse(readFileSync(path, "utf8")) as RestoreJournal;
  if (
    !Array.isArray(parsed.moveAside) ||
    (parsed.aside !== null && typeof parsed.aside !== "string")
  )
    throw new StateError("E_CORRUPT", `unreadable restore journal ${path}`, { details: { path } });
  return parsed;
}

/**
 * Settles what an earlier restore into `home` left: finishes a committed one, removes the staging
 * of one that died before its commit. A restore still running in another process is `E_BUSY`.
 * Costs one `lstat` when there is nothing to settle, so every open of a home can afford it.
 */
export function settlePendingRestore(home: string): "none" | "finished" | "removed" {
  const dir = workDir(home);
  if (!workDirPresent(dir)) return "none";
  let owner = "";
  try {
    owner = readFileSync(join(dir, OWNER_FILE), "utf8");
  } catch {
    // Died before it could write its owner: nothing committed either.
  }
  if (owner !== "" && ownerAlive(owner)) {
    throw new StateError(
      "E_BUSY",
      `a restore into ${home} is in progress (pid ${owner.split(" ")[0]}); wait for it to finish`,
      { details: { home, pid: Number(owner.split(" ")[0]) } },
    );
  }
  const journal = join(dir, JOURNAL_FILE);
  if (existsSync(journal)) {
    applyJournal(home, readJournal(journal));
    return "finished";
  }
  rmSync(dir, { recursive: true, force: true });
  return "removed";
}

/** Makes the private work directory of a new restore into `home`, owned by this process. */
export function beginRestoreWork(home: string): string {
  const dir = workDir(home);
  mkdirSync(dir, { mode: DIR_MODE });
  writeFileSync(join(dir, OWNER_FILE), ownerToken(currentProcessOwner()), { mode: FILE_MODE });
  return dir;
}

/**
 * The point of no return: once the journal is durable, the staged tree replaces the home (now, or
 * at the next open if this process dies first).
 */
export function commitRestore(home: string, journal: RestoreJournal): void {
  const dir = workDir(home);
  const temporary = join(dir, `${JOURNAL_FILE}.tmp`);
  const fd = openSync(temporary, "w", FILE_MODE);
  try {
    writeFileSync(fd, JSON.stringify(journal));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, join(dir, JOURNAL_FILE));
  syncDirectory(dir);
  applyJournal(home, journal);
}
