import { StateError } from "../db/errors.js";
import type { StagedFile, VirtualAgentFs } from "../stores/agent/vfs-store.js";
import { isVfsDescendant, VFS_ROOT } from "../vfs/path.js";

/** What a sync or import changed, by canonical VFS path. */
export interface SyncReport {
  created: string[];
  updated: string[];
  deleted: string[];
  /** Host entries that were not imported (symlinks inside the tree, FIFOs, sockets …). */
  skipped: Array<{ path: string; reason: string }>;
}

/**
 * Changes to apply to one subtree in one transaction. File contents are staged beforehand
 * (streamed, outside the transaction), so the commit itself is short and all-or-nothing.
 */
export interface SyncPlan {
  base: string;
  /** Remove everything below `base` first (an import with replace). */
  replace: boolean;
  /** Paths to remove (recursively) before anything is created. */
  deletions: string[];
  directories: string[];
  files: Map<string, StagedFile>;
  skipped: SyncReport["skipped"];
  /** The subtree must still have this fingerprint, or the commit is E_CONFLICT. */
  expectFingerprint?: string;
}

export function emptyPlan(base: string, replace = false): SyncPlan {
  return { base, replace, deletions: [], directories: [], files: new Map(), skipped: [] };
}

function checkFingerprint(vfs: VirtualAgentFs, plan: SyncPlan): void {
  if (plan.expectFingerprint === undefined) return;
  if (vfs.fingerprint(plan.base) !== plan.expectFingerprint) {
    throw new StateError(
      "E_CONFLICT",
      `vfs ${JSON.stringify(plan.base)} changed in namespace "${vfs.namespace}" while it was projected; nothing was synced back`,
      { details: { namespace: vfs.namespace, path: plan.base } },
    );
  }
}

function removeAll(vfs: VirtualAgentFs, plan: SyncPlan, report: SyncReport): void {
  const targets = plan.replace
    ? vfs.readdir(plan.base).map((e) => `${plan.base === VFS_ROOT ? "" : plan.base}/${e.name}`)
    : plan.deletions;
  // Parents first: a removed directory takes its children along, so later paths may be gone.
  for (const path of [...targets].sort()) {
    if (vfs.rm(path, { recursive: true, force: true }) > 0) report.deleted.push(path);
  }
}

/** Every path of a plan lies below its base: a defence against a planner's mistake. */
function checkInside(plan: SyncPlan): void {
  for (const path of [...plan.deletions, ...plan.directories, ...plan.files.keys()]) {
    if (!isVfsDescendant(path, plan.base)) {
      throw new TypeError(`Expected ${JSON.stringify(path)} to lie below ${plan.base}`);
    }
  }
}

/** Applies a plan in one transaction; on failure nothing changes and the staged files go. */
export function applyPlan(vfs: VirtualAgentFs, plan: SyncPlan): SyncReport {
  const report: SyncReport = { created: [], updated: [], deleted: [], skipped: plan.skipped };
  try {
    checkInside(plan);
    return vfs.batch(() => {
      checkFingerprint(vfs, plan);
      if (!vfs.exists(plan.base)) report.created.push(plan.base);
      vfs.mkdir(plan.base);
      removeAll(vfs, plan, report);
      for (const dir of [...plan.directories].sort()) {
        if (!vfs.exists(dir)) report.created.push(dir);
        vfs.mkdir(dir);
      }
      for (const [path, staged] of [...plan.files].sort(([a], [b]) => (a < b ? -1 : 1))) {
        (vfs.exists(path) ? report.updated : report.created).push(path);
        vfs.commitStaged(path, staged, { parents: true });
      }
      for (const list of [report.created, report.updated, report.deleted]) list.sort();
      return report;
    });
  } catch (error) {
    for (const staged of plan.files.values()) vfs.discardStaged(staged);
    throw error;
  }
}
