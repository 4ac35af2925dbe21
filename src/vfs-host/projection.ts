import { chmodSync, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import type { VirtualAgentFs } from "../stores/agent/vfs-store.js";
import { normalizeVfsPath } from "../vfs/path.js";
import {
  type HostManifest,
  hashHostFile,
  materialize,
  readHostFile,
  removeHostTree,
  scanHost,
} from "./host-tree.js";
import { applyPlan, emptyPlan, type SyncPlan, type SyncReport } from "./sync.js";

export interface ProjectionOptions {
  /** The VFS directory to project (default `/`, the whole namespace). */
  path?: string;
  /** Where the temp directory is created (default `os.tmpdir()`). */
  tmpRoot?: string;
}

export interface ProjectionResult<T> {
  /** What the callback returned. */
  result: T;
  /** What was synced back into the VFS. */
  changes: SyncReport;
}

/**
 * Compares the host tree after the command with what was materialized and stages the new and
 * edited files. Untouched files are recognized by hash, not mtime: a command may set mtimes.
 */
async function planSync(
  vfs: VirtualAgentFs,
  base: string,
  dir: string,
  manifest: HostManifest,
): Promise<SyncPlan> {
  const plan = emptyPlan(base);
  if (!existsSync(dir)) {
    throw new StateError(
      "E_CONFLICT",
      `the projection directory ${dir} was removed; nothing synced`,
      {
        details: { path: base, host: dir },
      },
    );
  }
  const { entries, skipped } = scanHost(dir, base);
  plan.skipped.push(...skipped);
  const onHost = new Map(entries.map((entry) => [entry.path, entry]));
  for (const [path, before] of manifest) {
    if (onHost.get(path)?.kind !== before.kind) plan.deletions.push(path);
  }
  try {
    for (const entry of entries) {
      const before = manifest.get(entry.path);
      if (entry.kind === "directory") {
        if (before?.kind !== "directory") plan.directories.push(entry.path);
      } else if (before?.kind !== "file" || before.sha256 !== hashHostFile(entry.host)) {
        plan.files.set(entry.path, await vfs.stage(readHostFile(entry.host)));
      }
    }
  } catch (error) {
    for (const staged of plan.files.values()) vfs.discardStaged(staged);
    throw error;
  }
  return plan;
}

/**
 * Materializes a VFS directory into a fresh 0700 temp directory, runs `fn(dir)` there (e.g. a
 * child process), then syncs creates, edits, deletes and new directories back in one
 * transaction. Symlinks the command made are never followed: one pointing outside the temp
 * directory fails the sync with E_PATH, one inside is skipped. If the subtree changed in the VFS
 * meanwhile, the sync is E_CONFLICT. The temp directory is removed in every case; when `fn`
 * throws, nothing is synced back.
 */
export async function withProjection<T>(
  vfs: VirtualAgentFs,
  fn: (dir: string) => T | Promise<T>,
  options: ProjectionOptions = {},
): Promise<ProjectionResult<T>> {
  rejectUnknownOptions(options, ["path", "tmpRoot"], "withProjection");
  const base = normalizeVfsPath(options.path ?? "/");
  const fingerprint = vfs.fingerprint(base);
  const dir = mkdtempSync(join(options.tmpRoot ?? tmpdir(), "agentstate-vfs-"));
  try {
    chmodSync(dir, 0o700);
    const manifest = materialize(vfs, base, dir);
    const result = await fn(dir);
    const plan = await planSync(vfs, base, dir, manifest);
    plan.expectFingerprint = fingerprint;
    return { result, changes: applyPlan(vfs, plan) };
  } finally {
    removeHostTree(dir);
  }
}
