import { readFileSync } from "node:fs";

/**
 * The process that owns a piece of work (a restore, a backup or migration run): its pid and its
 * start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`), so that a pid the kernel
 * handed to a new process is not taken for the owner that died. `started` is null where `/proc`
 * cannot tell (another platform): the pid alone is judged then.
 */
export interface ProcessOwner {
  pid: number;
  started: number | null;
}

/** The start time of a process, or null when it is gone or `/proc` cannot tell. */
export function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is parenthesized and may hold spaces: count from its end.
    const field = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const ticks = Number(field);
    return field !== undefined && Number.isSafeInteger(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

export function currentProcessOwner(): ProcessOwner {
  return { pid: process.pid, started: processStartTime(process.pid) };
}

/** Whether the owner still runs: its pid exists and, where known, started when the owner did. */
export function processOwnerAlive(owner: ProcessOwner): boolean {
  if (!Number.isSafeInteger(owner.pid) || owner.pid <= 0) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: a process of another user has this pid, so something runs there.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return owner.started === null || processStartTime(owner.pid) === owner.started;
}
