import * as fs from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import type { VfsStat, VirtualAgentFs } from "../stores/agent/vfs-store.js";
import type { ByteSource } from "../vfs/chunks.js";
import { normalizeVfsPath, vfsJoin, vfsRelative } from "../vfs/path.js";
import { decodeTar, encodeTar, type TarMemberOut } from "../vfs/tar.js";
import { materialize, readHostFile, removeHostTree, scanHost, writeHostFile } from "./host-tree.js";
import { applyPlan, emptyPlan, type SyncPlan, type SyncReport } from "./sync.js";

export interface VfsExportOptions {
  /** The VFS path to export (default `/`): a directory's contents, or one file. */
  path?: string;
}

export interface VfsImportOptions {
  /** The VFS directory to import into (default `/`; created when missing). */
  path?: string;
  /** Remove everything below the target first, so it ends up exactly like the source. */
  replace?: boolean;
}

export interface VfsExportReport {
  files: number;
  directories: number;
  bytes: number;
}

function exportBase(vfs: VirtualAgentFs, options: VfsExportOptions, where: string): VfsStat {
  rejectUnknownOptions(options, ["path"], where);
  return vfs.stat(normalizeVfsPath(options.path ?? "/"));
}

/**
 * A new or empty directory to export into (true when it was created here); anything else is
 * refused rather than merged into.
 */
function prepareTarget(dir: string): boolean {
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return true;
  }
  if (!fs.statSync(dir).isDirectory() || fs.readdirSync(dir).length > 0) {
    throw new StateError(
      "E_CONFLICT",
      `export target ${dir} exists and is not an empty directory`,
      {
        details: { path: dir },
      },
    );
  }
  return false;
}

function countOf(stats: readonly VfsStat[]): VfsExportReport {
  const files = stats.filter((s) => s.kind === "file");
  return {
    files: files.length,
    directories: stats.length - files.length,
    bytes: files.reduce((sum, s) => sum + s.size, 0),
  };
}

/**
 * Writes a VFS directory's contents (or one file) into a new or empty host directory:
 * directories 0700, files 0600, every path checked to stay inside `dir`.
 */
export function exportToDirectory(
  vfs: VirtualAgentFs,
  dir: string,
  options: VfsExportOptions = {},
): VfsExportReport {
  const base = exportBase(vfs, options, "exportToDirectory");
  const created = prepareTarget(dir);
  try {
    if (base.kind === "file") {
      writeHostFile(join(dir, base.name), vfs.readChunks(base.path));
      return countOf([base]);
    }
    const stats = vfs.list(base.path);
    materialize(vfs, base.path, dir);
    return countOf(stats);
  } catch (error) {
    // The target was new or empty: put it back that way rather than leave half an export.
    if (created) removeHostTree(dir);
    else for (const name of fs.readdirSync(dir)) removeHostTree(join(dir, name));
    throw error;
  }
}

async function stageAll(vfs: VirtualAgentFs, plan: SyncPlan, fill: () => Promise<void>) {
  try {
    await fill();
  } catch (error) {
    for (const staged of plan.files.values()) vfs.discardStaged(staged);
    throw error;
  }
  return applyPlan(vfs, plan);
}

/**
 * Imports a host directory into the VFS in one transaction (file contents are streamed in
 * first). Symlinks are never followed: one pointing outside `dir` is E_PATH, others are skipped.
 */
export function importFromDirectory(
  vfs: VirtualAgentFs,
  dir: string,
  options: VfsImportOptions = {},
): Promise<SyncReport> {
  rejectUnknownOptions(options, ["path", "replace"], "importFromDirectory");
  const plan = emptyPlan(normalizeVfsPath(options.path ?? "/"), options.replace === true);
  return stageAll(vfs, plan, async () => {
    const { entries, skipped } = scanHost(dir, plan.base);
    plan.skipped.push(...skipped);
    for (const entry of entries) {
      if (entry.kind === "directory") plan.directories.push(entry.path);
      else plan.files.set(entry.path, await vfs.stage(readHostFile(entry.host)));
    }
  });
}

function* tarMembers(vfs: VirtualAgentFs, base: VfsStat): IterableIterator<TarMemberOut> {
  const stats = base.kind === "file" ? [base] : vfs.list(base.path);
  for (const stat of stats) {
    yield {
      name: base.kind === "file" ? base.name : vfsRelative(base.path, stat.path),
      kind: stat.kind,
      size: stat.size,
      mtimeMs: stat.updatedAt,
      body: () => vfs.readChunks(stat.path),
    };
  }
}

/** A tar stream (ustar + pax long names) of a VFS directory's contents, or of one file. */
export function exportTar(vfs: VirtualAgentFs, options: VfsExportOptions = {}): Readable {
  const base = exportBase(vfs, options, "exportTar");
  return Readable.from(encodeTar(tarMembers(vfs, base)), { objectMode: false });
}

/**
 * Imports a tar stream into the VFS in one transaction. Member names go through the path
 * normalizer on their own (`../x` is E_PATH, never resolved against the target); links and
 * devices are refused. A later member with the same name wins, as with `tar -x`.
 */
export function importTar(
  vfs: VirtualAgentFs,
  source: ByteSource,
  options: VfsImportOptions = {},
): Promise<SyncReport> {
  rejectUnknownOptions(options, ["path", "replace"], "importTar");
  const plan = emptyPlan(normalizeVfsPath(options.path ?? "/"), options.replace === true);
  return stageAll(vfs, plan, async () => {
    for await (const member of decodeTar(source)) {
      const path = vfsJoin(plan.base, member.name);
      if (member.kind === "directory") {
        if (path !== plan.base) plan.directories.push(path);
        continue;
      }
      const previous = plan.files.get(path);
      if (previous) vfs.discardStaged(previous);
      plan.files.set(path, await vfs.stage(member.body));
    }
  });
}
