import { readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { sep } from "node:path";
import { StateError } from "./errors.js";

/** A process that has a file under a directory open. */
export interface FileHolder {
  pid: number;
  /** Its command line, shortened; `?` when it could not be read. */
  command: string;
  /** One of the files it holds, for the message. */
  path: string;
}

const PROC = "/proc";

function commandOf(pid: string): string {
  try {
    const words = readFileSync(`${PROC}/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    const line = words.join(" ").replace(/\s+/g, " ");
    return line.length > 80 ? `${line.slice(0, 79)}…` : line || "?";
  } catch {
    return "?";
  }
}

function heldUnder(pid: string, prefix: string): string | null {
  let fds: string[];
  try {
    fds = readdirSync(`${PROC}/${pid}/fd`);
  } catch {
    return null; // Gone meanwhile, or not ours to look at.
  }
  for (const fd of fds) {
    try {
      const target = readlinkSync(`${PROC}/${pid}/fd/${fd}`);
      if (target.startsWith(prefix)) return target;
    } catch {
      // The descriptor closed while we looked.
    }
  }
  return null;
}

/**
 * The other processes that have a file under `dir` open, read from `/proc/<pid>/fd` (Linux). SQLite
 * offers no way to ask who else has a database open: each connection's locks come and go with its
 * transactions. `null` where the platform has no `/proc`, so the caller can say it could not check.
 * Processes of other users are invisible unless this one runs as root.
 */
export function findFileHolders(dir: string): FileHolder[] | null {
  let pids: string[];
  try {
    pids = readdirSync(PROC).filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return []; // Nothing there, so nothing held.
  }
  const prefix = real.endsWith(sep) ? real : `${real}${sep}`;
  const holders: FileHolder[] = [];
  for (const pid of pids) {
    if (Number(pid) === process.pid) continue;
    const path = heldUnder(pid, prefix);
    if (path !== null) holders.push({ pid: Number(pid), command: commandOf(pid), path });
  }
  return holders;
}

/** `pid 123 (node gateway.js)` for each holder, for messages. */
export function describeHolders(holders: readonly FileHolder[]): string {
  const shown = holders.slice(0, 3).map((holder) => `pid ${holder.pid} (${holder.command})`);
  const more = holders.length - shown.length;
  return `${shown.join(", ")}${more > 0 ? `, and ${more} more` : ""}`;
}

/**
 * Refuses (E_BUSY, naming them) to `action` a home that other processes have files of open: an
 * operation that replaces databases must never interleave with a live writer.
 */
export function refuseHeldHome(home: string, action: string): void {
  const holders = findFileHolders(home);
  if (holders === null || holders.length === 0) return;
  throw new StateError(
    "E_BUSY",
    `${home} is open in another process: ${describeHolders(holders)}; stop it, then ${action}`,
    { details: { home, holders } },
  );
}
