import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { HomeBytes } from "./plan.js";

/**
 * The sizes of every regular file under `dir`, recursively: databases, their -wal and -shm,
 * cold archives, backups, config, anything else. A file that vanishes during the walk counts 0.
 */
export function directoryBytes(dir: string): number {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += directoryBytes(path);
    else if (entry.isFile()) {
      try {
        total += lstatSync(path).size;
      } catch {
        // Removed since it was listed.
      }
    }
  }
  return total;
}

/** The home's bytes, and each agent's directory's (`agents/<id>/`). */
export function measureHome(homePath: string, agentIds: readonly string[]): HomeBytes {
  const agents: Record<string, number> = {};
  for (const id of agentIds) agents[id] = directoryBytes(join(homePath, "agents", id));
  return { total: directoryBytes(homePath), agents };
}
