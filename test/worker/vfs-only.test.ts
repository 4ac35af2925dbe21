import { readdirSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../../src/home.js";
import type { BackendSpec, ScriptStep } from "../../src/worker/backend-spec.js";
import type { PermissionOptions } from "../../src/worker/permission.js";
import type { FilesystemOptions } from "../../src/worker/prepared-run.js";
import type { RunResult } from "../../src/worker/run-events.js";
import { type AgentRuntime, createAgentRuntime } from "../../src/worker/runner.js";
import {
  fixtureBackend,
  PROCESS_ENTRY,
  requireWorkerBuild,
  useTempDirs,
  WORKER_ENTRY,
} from "./support.js";

const tempDir = useTempDirs();
let home: StateHome;
let runtime: AgentRuntime;
beforeAll(requireWorkerBuild);
afterEach(async () => {
  await runtime?.close();
  home?.close();
});

// What this machine's /etc/hostname says: no tool output may ever contain it.
const HOST = (() => {
  try {
    return readFileSync("/etc/hostname", "utf8").trim() || hostname();
  } catch {
    return hostname();
  }
})();

function setup(): void {
  home = openStateHome({ home: tempDir() });
  runtime = createAgentRuntime({
    home: home.path,
    mode: "worker",
    workerEntry: WORKER_ENTRY,
    processEntry: PROCESS_ENTRY,
  });
}

function run(
  backend: BackendSpec,
  filesystem: FilesystemOptions = {},
  permission: PermissionOptions = {},
): Promise<RunResult> {
  return runtime.run({
    agentId: "main",
    session: { sessionKey: `k-${Math.random()}` },
    input: "escape",
    backend,
    filesystem,
    permission,
  });
}

function toolResults(result: RunResult): Array<{ isError: boolean; text: string }> {
  return home
    .agent("main")
    .transcripts.read(result.sessionId)
    .map(
      (e) =>
        e.event.message as
          | { role: string; isError: boolean; content: Array<{ text: string }> }
          | undefined,
    )
    .filter((m) => m?.role === "toolResult")
    .map((m) => ({ isError: m?.isError === true, text: m?.content[0]?.text ?? "" }));
}

function tool(name: string, args: Record<string, unknown>): ScriptStep {
  return { type: "tool", name, arguments: args };
}

describe("vfs-only runs in a worker", () => {
  it("refuse host files through every tool", async () => {
    setup();
    const outside = tempDir();
    const node = process.execPath;
    const attempts: ScriptStep[] = [
      tool("read_file", { path: "/etc/hostname" }),
      tool("read_file", { path: "workspace:/etc/hostname" }),
      tool("read_file", { path: "../../../etc/hostname" }),
      tool("write_file", { path: `workspace:${join(outside, "escaped")}`, content: "x" }),
      tool("write_file", { path: "../../escaped", content: "x" }),
      tool("list_files", { path: "workspace:/etc" }),
      tool("list_files", { path: "/../.." }),
      tool("delete_file", { path: `workspace:${outside}` }),
      tool("exec", { command: ["cat", "/etc/hostname"] }),
    ];
    const granted: ScriptStep[] = [
      tool("exec", { command: ["cat", "/etc/hostname"] }),
      tool("exec", { command: ["cat", "../../../../etc/hostname"] }),
      tool("exec", { command: ["sh", "-c", "cat /etc/hostname"] }),
      tool("exec", {
        command: [node, "-e", "console.log(require('fs').readFileSync('/etc/hostname','utf8'))"],
      }),
      tool("exec", { command: ["cp", "x", `--target-directory=${outside}`] }),
      tool("exec", { command: ["ls"], cwd: "workspace:/" }),
    ];
    const plain = await run({ kind: "scripted", steps: attempts });
    const withExec = await run(
      { kind: "scripted", steps: granted },
      {},
      { allowChildProcess: true },
    );
    for (const result of [plain, withExec]) {
      expect(result).toMatchObject({ status: "completed", mode: "thread" });
      const outcomes = toolResults(result);
      expect(outcomes).toHaveLength(result === plain ? attempts.length : granted.length);
      for (const outcome of outcomes) {
        expect(outcome.isError, outcome.text).toBe(true);
        expect(outcome.text).not.toContain(HOST);
      }
    }
    expect(toolResults(plain).map((o) => o.text.split(":")[0])).toEqual([
      "E_NOT_FOUND",
      ...Array(7).fill("E_PATH"),
      "E_INVALID_ARGUMENT",
    ]);
    expect(readdirSync(outside)).toEqual([]);
  });

  it("cannot widen its own filesystem from inside the turn", async () => {
    setup();
    const result = await run(fixtureBackend("escalate"));
    const report = JSON.parse(result.text) as {
      mutate: { ok: boolean };
      tool: { isError: boolean; output: string };
    };
    expect(report.mutate.ok).toBe(false);
    expect(report.tool).toMatchObject({ isError: true });
    expect(report.tool.output).toMatch(/^E_PATH/);
  });
});

describe("the permission seatbelt (process mode)", () => {
  it("stops backend code that goes around the tools; the database still works", async () => {
    setup();
    const outside = join(tempDir(), "escaped");
    const unconfined = JSON.parse((await run(fixtureBackend("probe", { outside }))).text);
    // Without the seatbelt, vfs-only confines the tools, not the backend's own code.
    expect(unconfined.read).toMatchObject({ ok: true });
    const result = await run(
      fixtureBackend("probe", { outside: `${outside}-2` }),
      {},
      { mode: "enforce" },
    );
    expect(result).toMatchObject({ status: "completed", mode: "process", persisted: 2 });
    expect(JSON.parse(result.text)).toEqual({
      read: { ok: false, code: "ERR_ACCESS_DENIED" },
      write: { ok: false, code: "ERR_ACCESS_DENIED" },
    });
  });

  it("disk mode: the workspace is writable, child processes are not unless granted", async () => {
    setup();
    const workspace = tempDir();
    const steps: ScriptStep[] = [
      tool("write_file", { path: "notes.txt", content: "kept" }),
      tool("exec", { command: ["ls"] }),
    ];
    const filesystem: FilesystemOptions = { mode: "disk", workspace };
    const denied = await run({ kind: "scripted", steps }, filesystem, { mode: "enforce" });
    expect(denied.mode).toBe("process");
    expect(readFileSync(join(workspace, "notes.txt"), "utf8")).toBe("kept");
    expect(toolResults(denied).map((o) => [o.isError, o.text.split(":")[0]])).toEqual([
      [false, `wrote 4 bytes to ${join(workspace, "notes.txt")}`],
      [true, "ERR_ACCESS_DENIED"],
    ]);
    const granted = await run({ kind: "scripted", steps }, filesystem, {
      mode: "enforce",
      allowChildProcess: true,
    });
    expect(toolResults(granted)[1]).toEqual({ isError: false, text: "exit 0\nnotes.txt\n" });
  });
});
