import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import type { AgentRuntimeBackend } from "./backend.js";
import { type AgentTurnParams, prepareAgentRun } from "./prepared-run.js";
import { resolveWorkerMode } from "./runner.js";

const base: AgentTurnParams = {
  agentId: "main",
  session: { sessionKey: "agent:main:main", sessionId: "s-1" },
  input: "hello",
  backend: { kind: "scripted", steps: [{ type: "text", text: "hi" }] },
};

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isStateError(error) ? error.code : (error as Error).name;
  }
  return undefined;
}

class Handle {
  close(): void {}
}

describe("prepareAgentRun", () => {
  it("builds a run that survives structuredClone, leaving the parent-owned fields behind", () => {
    const controller = new AbortController();
    const { run, blockers } = prepareAgentRun(
      {
        ...base,
        runId: "run-1",
        signal: controller.signal,
        onEvent: () => {},
        metadata: { channel: "telegram", at: new Date(0), tags: new Set(["a"]) },
      },
      "/tmp/home",
    );
    expect(blockers).toEqual([]);
    expect(structuredClone(run)).toEqual(run);
    expect(Object.keys(run)).not.toContain("signal");
    expect(Object.keys(run)).not.toContain("onEvent");
    expect(run).toMatchObject({
      version: 1,
      runId: "run-1",
      agentId: "main",
      homePath: "/tmp/home",
      session: { sessionId: "s-1", sessionKey: "agent:main:main" },
      filesystem: { mode: "vfs-only", workspace: null, namespace: "scratch" },
      permission: { mode: "off", allowChildProcess: false },
      timeoutMs: 600_000,
    });
    expect(Object.isFrozen(run)).toBe(true);
  });

  it("names everything that cannot cross, by path", () => {
    const live: AgentRuntimeBackend = { name: "mine", runTurn: async () => {} };
    const { run, blockers, liveBackend } = prepareAgentRun(
      {
        ...base,
        backend: live,
        metadata: {
          reply: { send: () => {}, ok: 1 },
          list: [1, Symbol("s")],
          handle: new Handle(),
          abort: new AbortController().signal,
          "odd key": () => {},
        },
      },
      "/tmp/home",
    );
    expect(liveBackend).toBe(live);
    expect(run.backend).toEqual({ kind: "live", name: "mine" });
    expect(blockers).toEqual([
      { path: "backend", reason: "a live AgentRuntimeBackend object" },
      { path: "metadata.reply.send", reason: "a function" },
      { path: "metadata.list[1]", reason: "a symbol" },
      { path: "metadata.handle", reason: "a live Handle (class instance)" },
      { path: "metadata.abort", reason: "an AbortSignal" },
      { path: 'metadata["odd key"]', reason: "a function" },
    ]);
  });

  it("refuses what a worker could not use, eagerly", () => {
    const home = "/tmp/home";
    expect(
      codeOf(() =>
        prepareAgentRun({ ...base, filesystem: { mode: "vfs-only", workspace: "/w" } }, home),
      ),
    ).toBe("E_INVALID_ARGUMENT");
    expect(codeOf(() => prepareAgentRun({ ...base, filesystem: { mode: "disk" } }, home))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(
      codeOf(() =>
        prepareAgentRun({ ...base, filesystem: { mode: "disk", workspace: "rel" } }, home),
      ),
    ).toBe("E_INVALID_ARGUMENT");
    expect(codeOf(() => prepareAgentRun({ ...base, runId: "no spaces" }, home))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(codeOf(() => prepareAgentRun({ ...base, timeoutMs: 0 }, home))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(codeOf(() => prepareAgentRun({ ...base, session: { sessionKey: "k" } }, home))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(codeOf(() => prepareAgentRun({ ...base, agentId: "../x" }, home))).toBe("E_INVALID_ID");
    expect(
      codeOf(() =>
        prepareAgentRun(
          { ...base, backend: { kind: "openai", baseUrl: "ftp://x", model: "m" } },
          home,
        ),
      ),
    ).toBe("E_INVALID_ARGUMENT");
    expect(
      codeOf(() => prepareAgentRun({ ...base, backend: { kind: "live", name: "x" } }, home)),
    ).toBe("E_INVALID_ARGUMENT");
    expect(
      codeOf(() => prepareAgentRun({ ...base, permission: { mode: "on" as "off" } }, home)),
    ).toBe("E_INVALID_ARGUMENT");
    expect(codeOf(() => prepareAgentRun({ ...base, timeout: 5 } as AgentTurnParams, home))).toBe(
      "TypeError",
    );
    expect(
      codeOf(() =>
        prepareAgentRun({ ...base, filesystem: { mode: "disk", root: "/w" } as never }, home),
      ),
    ).toBe("TypeError");
  });
});

describe("prepareAgentRun session resolution", () => {
  it("asks for the key's session only once everything else passed", () => {
    const asked: string[] = [];
    const resolveSessionId = (key: string) => {
      asked.push(key);
      return "resolved-1";
    };
    const params = { ...base, session: { sessionKey: "agent:main:x" } };
    expect(
      codeOf(() => prepareAgentRun({ ...params, timeoutMs: -1 }, "/h", { resolveSessionId })),
    ).toBe("E_INVALID_ARGUMENT");
    expect(asked).toEqual([]);
    const { run } = prepareAgentRun(params, "/h", { resolveSessionId });
    expect(run.session).toEqual({ sessionId: "resolved-1", sessionKey: "agent:main:x" });
    expect(asked).toEqual(["agent:main:x"]);
  });
});

describe("resolveWorkerMode", () => {
  it("takes the option, else AGENTSTATE_WORKER_MODE, else auto", () => {
    expect(resolveWorkerMode(undefined, {})).toBe("auto");
    expect(resolveWorkerMode(undefined, { AGENTSTATE_WORKER_MODE: "inline" })).toBe("inline");
    expect(resolveWorkerMode("worker", { AGENTSTATE_WORKER_MODE: "inline" })).toBe("worker");
    expect(codeOf(() => resolveWorkerMode(undefined, { AGENTSTATE_WORKER_MODE: "threads" }))).toBe(
      "E_INVALID_ARGUMENT",
    );
  });
});
