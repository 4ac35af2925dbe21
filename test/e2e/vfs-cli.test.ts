import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { VfsStore } from "../../src/stores/agent/vfs-store.js";
import { modeOf, useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const BINARY = Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 7919) % 256));

/** A home whose agent "main" has files in the default namespace and in "work". */
function seededHome(): string {
  const home = tempDir();
  const state = openStateHome({ home });
  const store = new VfsStore(state.agent("main").db);
  const scratch = store.namespace();
  scratch.writeFile("/notes/todo.txt", "water the basil\n", { parents: true });
  scratch.writeFile("/notes/deep/blob.bin", BINARY, { parents: true });
  scratch.mkdir("/empty");
  store.namespace("work").writeFile("/only-in-work.txt", "work");
  state.close();
  return home;
}

/** Runs the built CLI and keeps stdout as bytes. */
function cliBytes(args: readonly string[]): { status: number; stdout: Buffer; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, AGENTSTATE_HOME: "" },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr.toString() };
}

describe("agentstate vfs --help", () => {
  for (const command of [["vfs"], ["vfs", "ls"], ["vfs", "cat"], ["vfs", "export"]]) {
    it(`documents ${command.join(" ")}`, () => {
      const result = cli([...command, "--help"]);
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/Usage: agentstate vfs/);
      if (command.length > 1) expect(result.stdout).toContain("--agent <id>");
      if (command[1] === "ls" || command[1] === "export") expect(result.stdout).toContain("--json");
    });
  }
});

describe("agentstate vfs ls and cat", () => {
  it("lists directories as a table, as JSON and recursively", () => {
    const home = seededHome();
    const table = cli(["vfs", "ls", "--agent", "main", "--home", home]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^KIND\s+SIZE\s+MODIFIED\s+NAME/);
    expect(table.stdout).toMatch(/dir\s+-\s+\S+\s+empty/);
    const json = JSON.parse(
      cli(["vfs", "ls", "/notes", "--agent", "main", "--home", home, "--json"]).stdout,
    );
    expect(json.map((s: { name: string; kind: string }) => [s.name, s.kind])).toEqual([
      ["deep", "directory"],
      ["todo.txt", "file"],
    ]);
    const all = JSON.parse(
      cli(["vfs", "ls", "-R", "--agent", "main", "--home", home, "--json"]).stdout,
    );
    expect(all.map((s: { path: string }) => s.path)).toEqual([
      "/empty",
      "/notes",
      "/notes/deep",
      "/notes/deep/blob.bin",
      "/notes/todo.txt",
    ]);
    const work = cli(["vfs", "ls", "--agent", "main", "--namespace", "work", "--home", home]);
    expect(work.stdout).toContain("only-in-work.txt");
  });

  it("cats text and binary bytes exactly", () => {
    const home = seededHome();
    expect(cli(["vfs", "cat", "notes/todo.txt", "--agent", "main", "--home", home]).stdout).toBe(
      "water the basil\n",
    );
    const binary = cliBytes([
      "vfs",
      "cat",
      "/notes/deep/blob.bin",
      "--agent",
      "main",
      "--home",
      home,
    ]);
    expect(binary.status).toBe(0);
    expect(binary.stdout.equals(BINARY)).toBe(true);
  });

  it("fails with exit codes by error and never creates a home or an agent for a read", () => {
    const home = seededHome();
    const missingAgent = cli(["vfs", "ls", "--agent", "ghost", "--home", home]);
    expect(missingAgent.status).toBe(3);
    expect(existsSync(join(home, "agents", "ghost"))).toBe(false);
    const noHome = join(tempDir(), "nothing-here");
    expect(cli(["vfs", "ls", "--agent", "main", "--home", noHome]).status).toBe(3);
    expect(existsSync(noHome)).toBe(false);
    const outside = cli(["vfs", "ls", "a/../../etc", "--agent", "main", "--home", home, "--json"]);
    expect(outside.status).toBe(7);
    expect(JSON.parse(outside.stderr).error).toMatchObject({ code: "E_PATH" });
    expect(cli(["vfs", "cat", "../../etc/passwd", "--agent", "main", "--home", home]).status).toBe(
      7,
    );
    expect(cli(["vfs", "cat", "/notes", "--agent", "main", "--home", home]).status).toBe(5);
    expect(cli(["vfs", "cat", "/nope", "--agent", "main", "--home", home]).status).toBe(3);
    expect(
      cli(["vfs", "ls", "--agent", "main", "--namespace", "../x", "--home", home]).status,
    ).toBe(2);
  });
});

describe("agentstate vfs export", () => {
  it("exports to a new directory with private modes", () => {
    const home = seededHome();
    const out = join(tempDir(), "export");
    const result = cli([
      "vfs",
      "export",
      "--agent",
      "main",
      "--home",
      home,
      "--out",
      out,
      "--json",
    ]);
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ files: 2, directories: 3, out });
    expect(readFileSync(join(out, "notes", "deep", "blob.bin")).equals(BINARY)).toBe(true);
    expect(modeOf(statSync(join(out, "notes")))).toBe(0o700);
    expect(modeOf(statSync(join(out, "notes", "todo.txt")))).toBe(0o600);
    const again = cli(["vfs", "export", "--agent", "main", "--home", home, "--out", out]);
    expect(again.status).toBe(5);
  });

  it("exports a subtree as a tar file or to stdout, readable by tar", () => {
    const home = seededHome();
    const file = join(tempDir(), "notes.tar");
    const args = ["vfs", "export", "/notes", "--agent", "main", "--home", home];
    expect(cli([...args, "--tar", file]).status).toBe(0);
    const listed = execFileSync("tar", ["-tf", file], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean);
    expect(listed.sort()).toEqual(["deep/", "deep/blob.bin", "todo.txt"]);
    const piped = cliBytes([...args, "--tar", "-"]);
    expect(piped.stdout.equals(readFileSync(file))).toBe(true);
    const extracted = tempDir();
    execFileSync("tar", ["-xf", file, "-C", extracted]);
    expect(readFileSync(join(extracted, "deep", "blob.bin")).equals(BINARY)).toBe(true);
  });

  it("refuses ambiguous targets and existing tar files, writing nothing", () => {
    const home = seededHome();
    const base = ["vfs", "export", "--agent", "main", "--home", home];
    expect(cli(base).status).toBe(2);
    expect(cli([...base, "--out", tempDir(), "--tar", "-"]).status).toBe(2);
    const existing = join(tempDir(), "existing.tar");
    writeFileSync(existing, "keep me");
    expect(cli([...base, "--tar", existing]).status).toBe(5);
    expect(readFileSync(existing, "utf8")).toBe("keep me");
    const missing = join(tempDir(), "missing.tar");
    expect(cli([...base.slice(0, 2), "/nope", ...base.slice(2), "--tar", missing]).status).toBe(3);
    expect(existsSync(missing)).toBe(false);
  });
});
