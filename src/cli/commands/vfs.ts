import { once } from "node:events";
import { createWriteStream, openSync, rmSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import type { StateHome } from "../../home.js";
import {
  DEFAULT_VFS_NAMESPACE,
  type VfsStat,
  type VirtualAgentFs,
} from "../../stores/agent/vfs-store.js";
import { exportTar, exportToDirectory } from "../../vfs-host/archive.js";
import {
  addAgentOption,
  addExamples,
  addHomeOption,
  addJsonOption,
  agentOf,
  closeHome,
  type HomeOptions,
  type JsonOption,
  openReadHome,
  withReadHome,
} from "../common.js";
import { formatBytes, printJson, renderTable } from "../output.js";

interface VfsOptions extends HomeOptions, JsonOption {
  agent?: string;
  namespace: string;
}

interface LsOptions extends VfsOptions {
  recursive?: boolean;
}

interface ExportOptions extends VfsOptions {
  out?: string;
  tar?: string;
}

/** Reads never create: a missing home or agent is E_NOT_FOUND, not a new empty database. */
function vfsOf(home: StateHome, options: VfsOptions): VirtualAgentFs {
  return agentOf(home, options.agent).vfs.namespace(options.namespace);
}

/** `withHome` for commands that stream: the home and the agent stay open until the stream is done. */
async function withVfsAsync<T>(
  options: VfsOptions,
  fn: (vfs: VirtualAgentFs) => Promise<T>,
): Promise<T> {
  const home = openReadHome(options);
  try {
    const { agentId } = agentOf(home, options.agent);
    return await home.withAgent(agentId, (agent) => fn(agent.vfs.namespace(options.namespace)), {
      create: false,
    });
  } finally {
    closeHome(home);
  }
}

/** Copies a stream to a writable, honouring backpressure, without ending stdout. */
async function pump(source: Readable, target: Writable): Promise<void> {
  for await (const chunk of source) {
    if (!target.write(chunk)) await once(target, "drain");
  }
}

function vfsCommand(parent: Command, usage: string, description: string): Command {
  const command = addAgentOption(
    parent.command(usage).description(description),
    "the agent whose scratch filesystem to read",
  ).option("--namespace <name>", "the VFS namespace", DEFAULT_VFS_NAMESPACE);
  return addHomeOption(command);
}

function lsRows(vfs: VirtualAgentFs, path: string, recursive: boolean): VfsStat[] {
  const stat = vfs.stat(path);
  if (stat.kind === "file") return [stat];
  return recursive ? vfs.list(stat.path) : vfs.readdirStats(stat.path);
}

function printLs(rows: readonly VfsStat[], recursive: boolean): void {
  process.stdout.write(
    `${renderTable(rows, [
      { header: "KIND", value: (s) => (s.kind === "directory" ? "dir" : "file") },
      {
        header: "SIZE",
        value: (s) => (s.kind === "file" ? formatBytes(s.size) : "-"),
        align: "right",
      },
      {
        header: "MODIFIED",
        value: (s) => (s.updatedAt ? new Date(s.updatedAt).toISOString() : "-"),
      },
      { header: recursive ? "PATH" : "NAME", value: (s) => (recursive ? s.path : s.name) },
    ])}\n`,
  );
}

async function runExport(path: string, options: ExportOptions): Promise<void> {
  if ((options.out === undefined) === (options.tar === undefined)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      "vfs export needs exactly one of --out <dir> or --tar <file|->",
    );
  }
  if (options.out !== undefined) {
    const out = options.out;
    const report = withReadHome(options, (home) =>
      exportToDirectory(vfsOf(home, options), out, { path }),
    );
    if (options.json) printJson({ ...report, out });
    else
      process.stdout.write(
        `exported ${report.files} files, ${report.directories} directories (${formatBytes(report.bytes)}) to ${out}\n`,
      );
    return;
  }
  const tar = options.tar as string;
  await withVfsAsync(options, async (vfs) => {
    const source = exportTar(vfs, { path }); // checks the path before any file is created
    if (tar === "-") return pump(source, process.stdout);
    const fd = createTarFile(tar);
    try {
      await pipeline(source, createWriteStream(tar, { fd }));
    } catch (error) {
      rmSync(tar, { force: true }); // nothing half-written stays behind
      throw error;
    }
  });
}

/** A new tar file (0600); an existing one is E_CONFLICT, never overwritten. */
function createTarFile(path: string): number {
  try {
    return openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    throw new StateError("E_CONFLICT", `${path} already exists; choose a new file for --tar`, {
      details: { path },
    });
  }
}

export function registerVfs(program: Command): void {
  const vfs = program
    .command("vfs")
    .description("browse and export an agent's scratch filesystem (read-only)");
  addExamples(vfs, [
    "agentstate vfs ls -R",
    "agentstate vfs cat /lists/shopping.md --agent main",
    "agentstate vfs export / --agent main --tar scratch.tar",
  ]);
  registerLs(vfs);
  registerCat(vfs);
  registerExport(vfs);
}

function registerLs(vfs: Command): void {
  const ls = addJsonOption(
    vfsCommand(vfs, "ls [path]", "list a VFS directory (or show one file)").option(
      "-R, --recursive",
      "list everything below the directory",
    ),
  );
  addExamples(ls, [
    "agentstate vfs ls",
    "agentstate vfs ls /lists --agent main -R",
    "agentstate vfs ls / --namespace scratch --json",
  ]);
  ls.action((path: string | undefined, options: LsOptions) => {
    const recursive = options.recursive === true;
    const rows = withReadHome(options, (home) =>
      lsRows(vfsOf(home, options), path ?? "/", recursive),
    );
    if (options.json) printJson(rows);
    else printLs(rows, recursive);
  });
}

function registerCat(vfs: Command): void {
  const cat = vfsCommand(vfs, "cat <path>", "write a VFS file's bytes to stdout");
  addExamples(cat, [
    "agentstate vfs cat /lists/shopping.md",
    "agentstate vfs cat /notes/todo.md --agent research --namespace scratch",
  ]);
  cat.action((path: string, options: VfsOptions) =>
    withVfsAsync(options, (fs) => pump(fs.createReadStream(path), process.stdout)),
  );
}

function registerExport(vfs: Command): void {
  const exportCommand = addJsonOption(
    vfsCommand(
      vfs,
      "export [path]",
      "export a VFS directory's contents (or one file) to a directory or a tar archive",
    )
      .option("--out <dir>", "a new or empty host directory (files 0600, directories 0700)")
      .option("--tar <file>", "a new tar file, or - for stdout"),
  );
  addExamples(exportCommand, [
    "agentstate vfs export / --out ./scratch-copy",
    "agentstate vfs export /lists --agent main --tar lists.tar",
    "agentstate vfs export --tar - | tar -t",
  ]);
  exportCommand.action((path: string | undefined, options: ExportOptions) =>
    runExport(path ?? "/", options),
  );
}
