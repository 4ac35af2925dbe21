import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { FsCapability, MAX_READ_BYTES } from "./fs-capability.js";
import type { FilesystemMode } from "./prepared-run.js";

const tempDir = useTempDirs();
let home: StateHome | undefined;
afterEach(() => home?.close());

function capability(mode: FilesystemMode, allowExec?: boolean) {
  home = openStateHome({ home: tempDir() });
  const workspace = mode === "vfs-only" ? null : tempDir();
  const vfs = home.agent("main").vfs.namespace("scratch");
  const fs = new FsCapability({ mode, workspace, namespace: "scratch" }, vfs, allowExec);
  return { fs, vfs, workspace };
}

async function refusal(fn: () => unknown): Promise<string> {
  try {
    await fn();
  } catch (error) {
    return isStateError(error) ? error.code : String(error);
  }
  return "allowed";
}

const signal = new AbortController().signal;

describe("FsCapability, disk modes", () => {
  it("disk: plain paths are the workspace, scratch: paths the VFS", () => {
    const { fs, vfs, workspace } = capability("disk");
    fs.writeFile("notes/a.txt", "host");
    fs.writeFile("scratch:/notes/a.txt", "vfs");
    expect(readFileSync(join(workspace as string, "notes/a.txt"), "utf8")).toBe("host");
    expect(vfs.readFile("/notes/a.txt", "utf8")).toBe("vfs");
    expect(fs.list("notes")).toEqual(["a.txt"]);
    expect(fs.remove("notes/a.txt")).toBe(true);
  });

  it("vfs-scratch: plain paths are the VFS, workspace: paths the host", () => {
    const { fs, vfs, workspace } = capability("vfs-scratch");
    fs.writeFile("a.txt", "vfs");
    fs.writeFile("workspace:a.txt", "host");
    expect(vfs.readFile("/a.txt", "utf8")).toBe("vfs");
    expect(fs.readFile("workspace:a.txt")).toBe("host");
    expect(existsSync(join(workspace as string, "a.txt"))).toBe(true);
  });

  it("refuses paths that leave the workspace, lexically or through a symlink", async () => {
    const { fs, workspace } = capability("disk");
    const root = workspace as string;
    const outside = tempDir();
    writeFileSync(join(outside, "secret"), "s3cret");
    symlinkSync(outside, join(root, "link"));
    mkdirSync(join(root, "sub"));
    expect(await refusal(() => fs.readFile("/etc/hostname"))).toBe("E_PATH");
    expect(await refusal(() => fs.readFile("../x"))).toBe("E_PATH");
    expect(await refusal(() => fs.readFile("sub/../../x"))).toBe("E_PATH");
    expect(await refusal(() => fs.readFile("link/secret"))).toBe("E_PATH");
    expect(await refusal(() => fs.writeFile("link/new", "x"))).toBe("E_PATH");
    expect(await refusal(() => fs.remove("."))).toBe("E_PATH");
    expect(await refusal(() => fs.exec(["cat", "secret"], { cwd: "link", signal }))).toBe("E_PATH");
    expect(existsSync(join(outside, "new"))).toBe(false);
  });
});

describe("FsCapability, vfs-only", () => {
  it("refuses to read a file too big for a model's context", async () => {
    const { fs, vfs } = capability("vfs-only");
    vfs.writeFile("/big.log", Buffer.alloc(MAX_READ_BYTES + 1, 97));
    expect(await refusal(() => fs.readFile("/big.log"))).toBe("E_TOO_LARGE");
  });

  it("has no exec unless the profile grants child processes", async () => {
    const { fs } = capability("vfs-only");
    expect(await refusal(() => fs.exec(["ls"], { signal }))).toBe("E_INVALID_ARGUMENT");
  });

  it("gives every tool the VFS and nothing else", async () => {
    const { fs, vfs } = capability("vfs-only", true);
    fs.writeFile("/etc/hostname", "inside the vfs");
    expect(vfs.readFile("/etc/hostname", "utf8")).toBe("inside the vfs");
    expect(fs.readFile("/etc/hostname")).toBe("inside the vfs");
    expect(await refusal(() => fs.readFile("workspace:/etc/hostname"))).toBe("E_PATH");
    expect(await refusal(() => fs.writeFile("workspace:x", "x"))).toBe("E_PATH");
    expect(await refusal(() => fs.list("../.."))).toBe("E_PATH");
    expect(await refusal(() => fs.remove("/../etc"))).toBe("E_PATH");
    expect(await refusal(() => fs.exec(["cat", "/etc/hostname"], { signal }))).toBe("E_PATH");
    expect(await refusal(() => fs.exec(["cat", "../../etc/hostname"], { signal }))).toBe("E_PATH");
    expect(await refusal(() => fs.exec(["cp", "x", "--target-directory=/tmp"], { signal }))).toBe(
      "E_PATH",
    );
    expect(await refusal(() => fs.exec(["cat", "~/.ssh/id_rsa"], { signal }))).toBe("E_PATH");
    expect(await refusal(() => fs.exec(["sh", "-c", "cat /etc/hostname"], { signal }))).toBe(
      "E_PATH",
    );
    expect(await refusal(() => fs.exec(["sh", "-c", "cd .. && ls"], { signal }))).toBe("E_PATH");
    const script = "console.log(require('fs').readFileSync('/etc/hostname', 'utf8'))";
    expect(await refusal(() => fs.exec([process.execPath, "-e", script], { signal }))).toBe(
      "E_PATH",
    );
    expect(await refusal(() => fs.exec(["ls"], { cwd: "workspace:/", signal }))).toBe("E_PATH");
  });

  it("runs exec in a projection and syncs creates, edits and deletes back", async () => {
    const { fs, vfs } = capability("vfs-only", true);
    fs.writeFile("/work/keep.txt", "old");
    fs.writeFile("/work/drop.txt", "bye");
    const script =
      "const fs = require('fs'); fs.writeFileSync('keep.txt', 'new'); fs.rmSync('drop.txt'); fs.mkdirSync('out'); fs.writeFileSync('out/made.txt', process.cwd())";
    const result = await fs.exec([process.execPath, "-e", script], { cwd: "/work", signal });
    expect(result.exitCode).toBe(0);
    expect(vfs.readFile("/work/keep.txt", "utf8")).toBe("new");
    expect(vfs.exists("/work/drop.txt")).toBe(false);
    // The command ran in a temp directory, never in a host path the run could name.
    expect(vfs.readFile("/work/out/made.txt", "utf8")).toMatch(/agentstate-vfs-/);
    expect(result.synced).toMatchObject({ deleted: ["/work/drop.txt"] });
  });
});
