import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { StateError } from "../db/errors.js";
import type { VirtualAgentFs } from "../stores/agent/vfs-store.js";
import { normalizeVfsPath } from "../vfs/path.js";
import { withProjection } from "../vfs-host/projection.js";
import type { SyncReport } from "../vfs-host/sync.js";
import type { PreparedFilesystem } from "./prepared-run.js";
import { type CommandResult, checkCommand, confineArguments, runCommand } from "./run-command.js";

export interface ExecOptions {
  /** Working directory: a workspace path (disk modes) or a VFS directory (vfs-only). */
  cwd?: string;
  signal: AbortSignal;
  timeoutMs?: number;
}

export interface ExecResult extends CommandResult {
  /** vfs-only: what the command created, changed or deleted, synced back into the VFS. */
  synced: SyncReport | null;
}

type Location = { area: "vfs"; path: string } | { area: "host"; path: string };

const SCRATCH = "scratch:";
const WORKSPACE = "workspace:";
const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
/** A file tool's answer goes to a model's context: a bigger file is refused, not truncated. */
export const MAX_READ_BYTES = 1024 * 1024;

function refuse(path: string, reason: string): StateError {
  return new StateError("E_PATH", `${JSON.stringify(path)}: ${reason}`, {
    details: { path, reason },
  });
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
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
 * A workspace path, refused when it leaves the workspace lexically or through a symlink. The
 * check and the later use are separate calls (a rename in between could race it): a guard
 * against a model's paths, not a rooted filesystem capability.
 */
function confineHost(root: string, input: string): string {
  if (input.includes("\0")) throw refuse(input, "contains a NUL byte");
  const target = resolve(root, input);
  if (!isInside(root, target)) throw refuse(input, "is outside the workspace");
  let probe = target;
  while (!lexists(probe) && probe !== root) probe = dirname(probe);
  let real: string;
  try {
    real = realpathSync(probe);
  } catch {
    throw refuse(input, "passes through a dangling symlink");
  }
  if (!isInside(realpathSync(root), real))
    throw refuse(input, "leaves the workspace through a symlink");
  return target;
}

/**
 * The filesystem a run may use. `disk` and `vfs-scratch` reach the host workspace and the VFS
 * scratch namespace (`scratch:` and `workspace:` prefixes pick one explicitly); `vfs-only`
 * reaches the VFS alone, and nothing a run passes can change that; it gets exec (in a projection
 * of the VFS) only when its permission profile allows child processes.
 */
export class FsCapability {
  /** A copy taken at construction: whatever a backend later does to its run object changes nothing. */
  readonly filesystem: PreparedFilesystem;

  constructor(
    filesystem: PreparedFilesystem,
    private readonly vfs: VirtualAgentFs,
    /** A program is a host process: vfs-only runs get exec only when their profile grants it. */
    private readonly allowExec: boolean = filesystem.mode !== "vfs-only",
  ) {
    this.filesystem = Object.freeze({ ...filesystem });
  }

  readFile(path: string): string {
    const at = this.locate(path);
    const size = at.area === "vfs" ? this.vfs.stat(at.path).size : statSync(at.path).size;
    if (size > MAX_READ_BYTES) {
      throw new StateError(
        "E_TOO_LARGE",
        `${JSON.stringify(path)} is ${size} bytes; read_file returns at most ${MAX_READ_BYTES}`,
        {
          details: { path, size, limit: MAX_READ_BYTES },
        },
      );
    }
    return at.area === "vfs" ? this.vfs.readFile(at.path, "utf8") : readFileSync(at.path, "utf8");
  }

  writeFile(path: string, content: string): { path: string; bytes: number } {
    const at = this.locate(path);
    if (at.area === "vfs") {
      const stat = this.vfs.writeFile(at.path, content, { parents: true });
      return { path: `${SCRATCH}${stat.path}`, bytes: stat.size };
    }
    mkdirSync(dirname(at.path), { recursive: true });
    writeFileSync(at.path, content);
    return { path: at.path, bytes: Buffer.byteLength(content) };
  }

  /** Names in a directory; subdirectories end with `/`. */
  list(path = "."): string[] {
    const at = this.locate(path);
    if (at.area === "vfs") {
      return this.vfs.readdir(at.path).map((e) => (e.kind === "directory" ? `${e.name}/` : e.name));
    }
    return readdirSync(at.path, { withFileTypes: true })
      .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
      .sort();
  }

  /** Removes a file or a directory tree; returns whether something was there. */
  remove(path: string): boolean {
    const at = this.locate(path);
    if (at.area === "vfs") return this.vfs.rm(at.path, { recursive: true, force: true }) > 0;
    if (at.path === this.filesystem.workspace) throw refuse(path, "is the workspace itself");
    const existed = existsSync(at.path);
    rmSync(at.path, { recursive: true, force: true });
    return existed;
  }

  /**
   * Runs argv (no shell) in `cwd`, located like any path: a host directory runs there; a VFS
   * directory is projected into a temp directory and what the command changed is synced back.
   */
  async exec(command: readonly string[], options: ExecOptions): Promise<ExecResult> {
    const argv = checkCommand(command);
    if (!this.allowExec) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        "exec is not available to this vfs-only run: a program runs on the host, so it needs permission.allowChildProcess",
      );
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    const at = this.locate(options.cwd ?? ".");
    if (at.area === "host") {
      const result = await runCommand(argv, {
        cwd: at.path,
        env: process.env,
        signal: options.signal,
        timeoutMs,
      });
      return { ...result, synced: null };
    }
    const vfsOnly = this.filesystem.mode === "vfs-only";
    if (vfsOnly) confineArguments(argv);
    const projected = await withProjection(
      this.vfs,
      (dir) => {
        // HOME and TMPDIR inside the projection, and for vfs-only no inherited variables at all.
        const base = vfsOnly
          ? { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8" }
          : process.env;
        const env = { ...base, HOME: dir, TMPDIR: dir };
        return runCommand(argv, { cwd: dir, env, signal: options.signal, timeoutMs });
      },
      { path: at.path },
    );
    return { ...projected.result, synced: projected.changes };
  }

  private locate(input: string): Location {
    if (typeof input !== "string") throw new TypeError("Expected a path string");
    const { mode, workspace } = this.filesystem;
    let area: "vfs" | "host" = mode === "disk" ? "host" : "vfs";
    let path = input;
    if (input.startsWith(SCRATCH)) {
      area = "vfs";
      path = input.slice(SCRATCH.length);
    } else if (input.startsWith(WORKSPACE)) {
      area = "host";
      path = input.slice(WORKSPACE.length);
    }
    if (area === "vfs") return { area, path: normalizeVfsPath(path === "" ? "/" : path) };
    if (workspace === null) throw refuse(input, "a vfs-only run has no host filesystem");
    return { area, path: confineHost(workspace, path === "" ? "." : path) };
  }
}
