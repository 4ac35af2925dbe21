// Node's permission model as a seatbelt for one run, and only that. What it does not do:
// - It is launch policy for a whole process, so it cannot be applied to a worker thread: an
//   enforced run gets a forked process of its own (about a quarter second per turn).
// - better-sqlite3 (the driver on Node 20) is a native addon, so --allow-addons is always granted,
//   and native code is outside the model: on Node 20.20, `ATTACH DATABASE '/any/path'` through a connection the
//   run opened creates and reads files no grant lists, and an extension loaded through the
//   driver is arbitrary native code.
// - Node documents further gaps (file descriptors opened before, symlinks, loadable code); a
//   child process, once granted, runs with no restriction at all.
// It is defence in depth behind the filesystem capability (fs-capability.ts), never instead.
import { createRequire } from "node:module";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { RESTORE_WORK_DIR } from "../db/pending-restore.js";
import { agentDbRelativePath, GLOBAL_DB_RELATIVE_PATH } from "../home.js";
import type { PreparedAgentRun } from "./prepared-run.js";

export interface PermissionOptions {
  /**
   * `off` (default): no seatbelt. `enforce`: the run goes to a forked process started under
   * Node's permission model with the grants below. Defence in depth, not the boundary: see
   * `permissionGrants`.
   */
  mode?: "off" | "enforce";
  /** Let the run start child processes (the exec tool needs this). Default false. */
  allowChildProcess?: boolean;
  /** Extra absolute paths the run may read (a backend module's own files …). */
  read?: string[];
  /** Extra absolute paths the run may write. */
  write?: string[];
}

export interface PermissionProfile {
  readonly mode: "off" | "enforce";
  readonly allowChildProcess: boolean;
  readonly read: readonly string[];
  readonly write: readonly string[];
}

/** What an enforced run may touch, and the flags that say so to `node`. */
export interface PermissionGrants {
  read: string[];
  write: string[];
  childProcess: boolean;
  /** Always false: only trusted parent code starts workers. */
  worker: false;
  /**
   * Always true: better-sqlite3 is a native addon and the worker must open its own database.
   * Native code is outside the permission model, so SQLite's own file access is not checked.
   */
  addons: true;
}

const OPTION_KEYS = new Set(["mode", "allowChildProcess", "read", "write"]);

function checkPaths(paths: unknown, name: string): readonly string[] {
  if (paths === undefined) return Object.freeze([]);
  if (!Array.isArray(paths) || !paths.every((p) => typeof p === "string" && isAbsolute(p))) {
    throw new StateError("E_INVALID_ARGUMENT", `permission.${name} must be absolute paths`);
  }
  return Object.freeze(paths.map((p) => resolve(p)));
}

export function checkPermissionOptions(options: PermissionOptions = {}): PermissionProfile {
  rejectUnknownOptions(options, OPTION_KEYS, "permission");
  const { mode = "off", allowChildProcess = false } = options;
  if (mode !== "off" && mode !== "enforce") {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `permission.mode must be "off" or "enforce", got ${String(mode)}`,
    );
  }
  return Object.freeze({
    mode,
    allowChildProcess: allowChildProcess === true,
    read: checkPaths(options.read, "read"),
    write: checkPaths(options.write, "write"),
  });
}

/** The package's own code, and the node_modules directory its dependencies load from. */
function codeRoots(): string[] {
  const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
  try {
    const sqlite = createRequire(import.meta.url).resolve("better-sqlite3/package.json");
    return [packageRoot, dirname(dirname(sqlite))];
  } catch {
    // An optional dependency: on node:sqlite the dependencies may have no better-sqlite3 at all.
    const deps = createRequire(import.meta.url).resolve("commander/package.json");
    return [packageRoot, dirname(dirname(deps))];
  }
}

/**
 * Grants for an enforced run: read the code; read and write the home's global database
 * directory and this agent's database directory (not other agents'); in disk modes, the
 * workspace; the run's own temp directory (vfs-only exec projects there); plus the profile's
 * extra paths. No child processes unless the profile allows them, never workers.
 */
export function permissionGrants(run: PreparedAgentRun, tempDir: string): PermissionGrants {
  const databases = [
    dirname(join(run.homePath, GLOBAL_DB_RELATIVE_PATH)),
    dirname(join(run.homePath, agentDbRelativePath(run.agentId))),
  ];
  const workspace = run.filesystem.workspace === null ? [] : [run.filesystem.workspace];
  const write = [...databases, ...workspace, tempDir, ...run.permission.write];
  // A backend module may import its neighbours.
  const backendDir = run.backend.kind === "module" ? [dirname(fileURLToPath(run.backend.url))] : [];
  // Opening the home first looks for a restore that died after its commit; Node 24 checks even
  // that lstat against the grants (Node 20 let it through).
  const restoreMarker = join(run.homePath, RESTORE_WORK_DIR);
  return {
    read: [
      ...new Set([...codeRoots(), ...backendDir, ...write, restoreMarker, ...run.permission.read]),
    ],
    write: [...new Set(write)],
    childProcess: run.permission.allowChildProcess,
    worker: false,
    addons: true,
  };
}

/** `node` flags for the grants: `--permission` where Node has it, else Node 20's experimental flag. */
export function permissionFlags(grants: PermissionGrants): string[] {
  const flag = process.allowedNodeEnvironmentFlags.has("--permission")
    ? "--permission"
    : "--experimental-permission";
  // One flag per path: Node 20.x no longer accepts comma-separated lists.
  return [
    flag,
    ...grants.read.map((path) => `--allow-fs-read=${path}`),
    ...grants.write.map((path) => `--allow-fs-write=${path}`),
    ...(grants.childProcess ? ["--allow-child-process"] : []),
    ...(grants.addons ? ["--allow-addons"] : []),
  ];
}
