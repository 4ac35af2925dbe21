import { spawn } from "node:child_process";
import { cpSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, PROJECT_ROOT, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const MAIN = "5d1c0a3e-8f2b-4c71-9a0e-2b7d6f4e1a90";

/** Every `-wal` / `-shm` file under `dir`, relative to it. */
function sidecars(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => /-(wal|shm)$/.test(name))
    .map((name) => relative(dir, join(dir, name)))
    .sort();
}

describe("every CLI command closes the databases it opened", () => {
  it("leaves no -wal or -shm file beside any database of the home", () => {
    const home = join(tempDir(), "home");
    cpSync(join(PROJECT_ROOT, "examples/legacy-home"), home, { recursive: true });
    const out = tempDir();
    const commands: string[][] = [
      ["doctor"],
      ["doctor", "--fix"],
      ["doctor", "--history"],
      // The plan reads the migration ledger of the migrated home.
      ["doctor"],
      ["doctor", "--json"],
      ["doctor", "--fix"],
      ["status"],
      ["status", "--json"],
      ["sessions", "list", "--agent", "main"],
      ["sessions", "show", "agent:main:main", "--agent", "main"],
      ["transcript", "list"],
      ["transcript", "show", MAIN, "--agent", "main"],
      ["transcript", "search", "basil"],
      ["transcript", "export", MAIN, "--agent", "main", "--out", join(out, "main.jsonl")],
      ["kv", "set", "prefs", "theme", '"dark"'],
      ["kv", "set", "notes", "n1", "{}", "--agent", "main"],
      ["kv", "get", "prefs", "theme"],
      ["kv", "list", "prefs"],
      ["kv", "delete", "notes", "n1", "--agent", "main"],
      ["cron", "list"],
      ["memory", "topics", "--agent", "main"],
      ["memory", "facts", "--agent", "main"],
      ["vfs", "ls", "--agent", "main"],
      ["gc"],
      ["backup", "create", "--out", join(out, "backup.tar.gz")],
      ["backup", "list"],
      ["backup", "verify", join(out, "backup.tar.gz")],
    ];
    const left: Record<string, string[]> = {};
    for (const args of commands) {
      // `backup verify` reads only the archive: it takes no home.
      const homeArgs = args[1] === "verify" ? [] : ["--home", home];
      const result = cli([...args, ...homeArgs]);
      expect(result.status, `${args.join(" ")}: ${result.stderr}`).toBe(0);
      const found = sidecars(home);
      if (found.length > 0) left[args.join(" ")] = found;
    }
    expect(left).toEqual({});
  }, 180_000);

  it("leaves none after a command that fails", () => {
    const home = join(tempDir(), "home");
    cpSync(join(PROJECT_ROOT, "examples/legacy-home"), home, { recursive: true });
    expect(cli(["doctor", "--fix", "--home", home]).status).toBe(0);
    const failing: string[][] = [
      ["transcript", "show", "no-such-session", "--agent", "main"],
      ["transcript", "search", "basil", "--session", "no-such-session"],
      ["sessions", "show", "agent:main:nope", "--agent", "main"],
      ["kv", "get", "prefs", "missing"],
      ["cron", "runs", "no-such-job"],
    ];
    const left: Record<string, string[]> = {};
    for (const args of failing) {
      const result = cli([...args, "--home", home]);
      expect(result.status, args.join(" ")).not.toBe(0);
      const found = sidecars(home);
      if (found.length > 0) left[args.join(" ")] = found;
    }
    expect(left).toEqual({});
  });

  it("leaves none when the reader closes the pipe early", async () => {
    const home = join(tempDir(), "home");
    const state = openStateHome({ home });
    const scratch = state.agent("main").vfs.namespace("scratch");
    scratch.writeFile("/big.bin", Buffer.alloc(16 * 1024 * 1024, 97));
    state.close();
    expect(sidecars(home)).toEqual([]);
    const left: Record<string, string[]> = {};
    for (const args of [
      ["vfs", "cat", "/big.bin"],
      ["vfs", "export", "/", "--tar", "-"],
    ]) {
      const code = await readFirstChunk([
        ...args,
        "--agent",
        "main",
        "--namespace",
        "scratch",
        "--home",
        home,
      ]);
      expect(code, args.join(" ")).toBe(0);
      const found = sidecars(home);
      if (found.length > 0) left[args.join(" ")] = found;
    }
    expect(left).toEqual({});
  });
});

/** Runs the CLI like `agentstate … | head -c 1`: stdout is closed after the first chunk. */
function readFirstChunk(args: readonly string[]): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, AGENTSTATE_HOME: "" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    child.stdout.once("data", () => child.stdout.destroy());
    child.on("exit", (code) => resolve(code));
  });
}
