import { existsSync, lstatSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { StateError } from "../db/errors.js";
import { agentDbRelativePath, GLOBAL_DB_RELATIVE_PATH } from "../home.js";
import type { ArchiveScan } from "./archive-scan.js";
import { type BackupManifest, toArchivePath } from "./manifest.js";

export interface RestoreItem {
  homePath: string;
  /** The verified body in the staging directory. */
  staged: string;
  isDatabase: boolean;
}

/** The databases a home already has: the global one and every `agents/<id>/agent/agent.sqlite`. */
export function existingDatabases(target: string): string[] {
  if (!existsSync(target)) return [];
  if (!statSync(target).isDirectory()) {
    throw new StateError("E_PATH", `${target} exists and is not a directory`, {
      details: { path: target },
    });
  }
  const found = [join(target, GLOBAL_DB_RELATIVE_PATH)].filter((path) => existsSync(path));
  const agentsDir = join(target, "agents");
  if (existsSync(agentsDir) && statSync(agentsDir).isDirectory()) {
    for (const name of readdirSync(agentsDir).sort()) {
      let path: string;
      try {
        path = join(target, agentDbRelativePath(name));
      } catch {
        continue; // Not an agent id, so not an agent's directory.
      }
      if (existsSync(path)) found.push(path);
    }
  }
  return found;
}

/** Pairs every manifest entry with its staged, verified body. */
export function planRestore(manifest: BackupManifest, scan: ArchiveScan): RestoreItem[] {
  const staged = new Map(scan.entries.map((entry) => [entry.path, entry.stagedPath]));
  const items = [
    ...manifest.databases.map((db) => ({
      homePath: db.homePath,
      name: db.snapshotPath,
      isDatabase: true,
    })),
    ...manifest.files.map((file) => ({
      homePath: file.homePath,
      name: file.archivePath,
      isDatabase: false,
    })),
    // Restored as a file of the home (0600, like the rest): loading it is the operator's call.
    ...(manifest.controlPlane
      ? [
          {
            homePath: manifest.controlPlane.homePath,
            name: manifest.controlPlane.archivePath,
            isDatabase: false,
          },
        ]
      : []),
  ];
  return items.map(({ homePath, name, isDatabase }) => {
    const path = staged.get(name);
    if (!path) throw new Error(`verified entry ${name} was not staged`);
    return { homePath, staged: path, isDatabase };
  });
}

function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * What in an existing target stands where a restored file must go: the path itself, or an
 * ancestor that is not a real directory (a file, or a symbolic link that would lead the restore
 * out of the target).
 */
export function blockers(target: string, items: readonly RestoreItem[]): string[] {
  const found = new Set<string>();
  for (const item of items) {
    // A stale WAL or journal beside a restored database would be replayed into it on open.
    if (item.isDatabase) {
      const dest = join(target, ...item.homePath.split("/"));
      for (const suffix of ["-wal", "-shm", "-journal"]) {
        if (lexists(`${dest}${suffix}`)) found.add(`${dest}${suffix}`);
      }
    }
    const segments = item.homePath.split("/");
    let path = target;
    for (const [i, segment] of segments.entries()) {
      path = join(path, segment);
      if (!lexists(path)) break;
      const last = i === segments.length - 1;
      if (last || !lstatSync(path).isDirectory()) {
        found.add(path);
        break;
      }
    }
  }
  return [...found].sort();
}

export function describePaths(target: string, paths: readonly string[]): string {
  const shown = paths.slice(0, 5).map((path) => toArchivePath(relative(target, path)));
  return `${shown.join(", ")}${paths.length > shown.length ? `, and ${paths.length - shown.length} more` : ""}`;
}
