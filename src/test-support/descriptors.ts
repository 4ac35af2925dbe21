import { readdirSync, readlinkSync } from "node:fs";

/**
 * Descriptors this process has open on `path`, read from /proc (an oracle apart from the code).
 * Count them on a -wal file: SQLite keeps a closed connection's descriptor of the database file
 * itself open while another connection of the process holds locks on it.
 */
export function descriptorsOn(path: string): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) n++;
    } catch {
      // Closed while we looked.
    }
  }
  return n;
}
