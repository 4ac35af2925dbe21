import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import type { AgentRuntimeBackend } from "./backend.js";
import type { ScriptStep } from "./backend-spec.js";
import type { RunEvent } from "./run-events.js";
import { type AgentRuntime, createAgentRuntime } from "./runner.js";

const tempDir = useTempDirs();
let home: StateHome;
let runtime: AgentRuntime;
afterEach(async () => {
  await runtime?.close();
  home?.close();
});

function setup(mode: "inline" | "auto" | "worker" = "inline"): void {
  home = openStateHome({ home: tempDir() });
  runtime = createAgentRuntime({ home, mode });
}

function scripted(steps: ScriptStep[]) {
  return { kind: "scripted" as const, steps };
}

function rows(sessionId: string) {
  return home
    .agent("main")
    .transcripts.read(sessionId)
    .map((e) => {
      const message = e.event.message as
        | { role: string; content: Array<{ text?: string }> }
        | undefined;
      return message ? `${message.role}:${message.content[0]?.text ?? ""}` : e.event.type;
    });
}

describe("AgentRuntime inline", () => {
  it("runs a scripted turn: transcript rows, counters, summary artifact, ordered events", async () => {
    setup();
    const events: RunEvent[] = [];
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "agent:main:main" },
      input: "hello",
      runId: "run-1",
      backend: scripted([{ type: "text", text: "hi there, how can I help?", chunkSize: 8 }]),
      onEvent: (event) => {
        events.push(event);
      },
    });
    expect(result).toMatchObject({
      status: "completed",
      mode: "inline",
      text: "hi there, how can I help?",
      persisted: 2,
      failure: null,
      blockers: [],
    });
    expect(result.usage).toEqual({ input: 2, output: 7, totalTokens: 9 });
    expect(rows(result.sessionId)).toEqual([
      "session",
      "user:hello",
      "assistant:hi there, how can I help?",
    ]);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.kind)).toEqual([
      "lifecycle",
      "message",
      "stream",
      "stream",
      "stream",
      "stream",
      "message",
      "usage",
      "lifecycle",
      "final",
    ]);
    const agent = home.agent("main");
    expect(agent.sessions.get("agent:main:main")?.entry).toMatchObject({
      sessionId: result.sessionId,
      turnCount: 1,
      lastRunId: "run-1",
      lastRunStatus: "completed",
    });
    const summary = JSON.parse(String(agent.runArtifacts.get("run-1", "/run.json")?.data));
    expect(summary).toMatchObject({
      status: "completed",
      persisted: 2,
      sessionId: result.sessionId,
    });
  });

  it("gives the backend the session's context, this turn's input included", async () => {
    setup();
    const seen: string[][] = [];
    const backend: AgentRuntimeBackend = {
      name: "probe",
      async runTurn(turn) {
        seen.push(turn.context.map((entry) => entry.role));
        turn.reply({ content: [{ type: "text", text: "ok" }], stopReason: "stop" });
      },
    };
    const params = { agentId: "main", session: { sessionKey: "k" }, backend };
    await runtime.run({ ...params, input: "one" });
    await runtime.run({ ...params, input: "two" });
    expect(seen).toEqual([["user"], ["user", "assistant", "user"]]);
  });

  it("auto: a live backend stays inline and the result says why; forced worker mode refuses it", async () => {
    setup("auto");
    const backend: AgentRuntimeBackend = {
      name: "live",
      async runTurn(turn) {
        turn.reply({ content: [{ type: "text", text: "ok" }], stopReason: "stop" });
      },
    };
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "x",
      backend,
      metadata: { send: () => {} },
    });
    expect(result.mode).toBe("inline");
    expect(result.blockers.map((b) => b.path)).toEqual(
      expect.arrayContaining(["backend", "metadata.send"]),
    );
    await runtime.close();
    runtime = createAgentRuntime({ home, mode: "worker" });
    const refused = await runtime
      .run({ agentId: "main", session: { sessionKey: "k" }, input: "x", backend })
      .catch((e: unknown) => e);
    expect(isStateError(refused, "E_INVALID_ARGUMENT")).toBe(true);
    expect((refused as Error).message).toMatch(/backend is a live AgentRuntimeBackend object/);
  });

  it("refuses a permission seatbelt it cannot give inline", async () => {
    setup("inline");
    const refused = await runtime
      .run({
        agentId: "main",
        session: { sessionKey: "k" },
        input: "x",
        backend: scripted([]),
        permission: { mode: "enforce" },
      })
      .catch((e: unknown) => e);
    expect(isStateError(refused, "E_INVALID_ARGUMENT")).toBe(true);
  });

  it("times out a slow backend: timed_out, nothing stored after the cancel", async () => {
    setup();
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "slow",
      timeoutMs: 50,
      backend: scripted([
        { type: "wait", ms: 10_000 },
        { type: "text", text: "too late" },
      ]),
    });
    expect(result).toMatchObject({
      status: "timed_out",
      persisted: 1,
      failure: { kind: "timeout" },
    });
    expect(rows(result.sessionId)).toEqual(["session", "user:slow"]);
    expect(home.agent("main").sessions.get("k")?.entry.turnCount).toBeUndefined();
  });

  it("aborts mid-stream on the caller's signal", async () => {
    setup();
    const controller = new AbortController();
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "go",
      signal: controller.signal,
      backend: scripted([{ type: "text", text: "a".repeat(5000), chunkSize: 10, delayMs: 20 }]),
      onEvent: (event) => {
        if (event.kind === "stream" && event.text.length > 0) controller.abort("user pressed stop");
      },
    });
    expect(result).toMatchObject({
      status: "aborted",
      failure: { kind: "aborted", message: "aborted by the caller: user pressed stop" },
    });
    expect(rows(result.sessionId)).toEqual(["session", "user:go"]);
  });

  it("fences a backend that ignores the cancel: its later writes throw and store nothing", async () => {
    setup();
    const controller = new AbortController();
    const refused: unknown[] = [];
    let finished: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const backend: AgentRuntimeBackend = {
      name: "stubborn",
      async runTurn(turn) {
        for (let i = 0; i < 6; i++) {
          await sleep(5);
          try {
            turn.reply({ content: [{ type: "text", text: `part ${i}` }], stopReason: "stop" });
          } catch (error) {
            refused.push(error);
          }
          if (i === 1) controller.abort();
        }
        finished();
      },
    };
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "go",
      backend,
      signal: controller.signal,
    });
    await done;
    expect(result).toMatchObject({ status: "aborted", persisted: 3 });
    expect(refused).toHaveLength(4);
    expect(refused.every((error) => (error as Error).name === "RunCancelled")).toBe(true);
    expect(rows(result.sessionId)).toEqual([
      "session",
      "user:go",
      "assistant:part 0",
      "assistant:part 1",
    ]);
  });

  it("a backend that throws ends failed, and the entry records it", async () => {
    setup();
    const backend: AgentRuntimeBackend = {
      name: "broken",
      async runTurn() {
        throw new RangeError("model exploded");
      },
    };
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "x",
      backend,
    });
    expect(result).toMatchObject({
      status: "failed",
      failure: { kind: "backend", message: "model exploded" },
    });
    expect(home.agent("main").sessions.get("k")?.entry).toMatchObject({ lastRunStatus: "failed" });
  });

  it("a parent handler that throws cancels the run", async () => {
    setup();
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "x",
      backend: scripted([{ type: "text", text: "a".repeat(500), chunkSize: 1, delayMs: 10 }]),
      onEvent: (event) => {
        if (event.kind === "stream") throw new TypeError("channel is down");
      },
    });
    expect(result).toMatchObject({ status: "failed", failure: { kind: "handler" } });
    expect(result.failure?.message).toMatch(/channel is down/);
  });

  it("never starts a run whose signal was aborted while it waited", async () => {
    setup();
    const controller = new AbortController();
    controller.abort();
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "x",
      backend: scripted([]),
      signal: controller.signal,
    });
    expect(result).toMatchObject({ status: "aborted", persisted: 0 });
    expect(rows(result.sessionId)).toEqual(["session"]);
  });

  it("runs turns on one session one after the other", async () => {
    setup();
    const turn = (n: number) =>
      runtime.run({
        agentId: "main",
        session: { sessionKey: "k" },
        input: `q${n}`,
        backend: scripted([
          { type: "wait", ms: 20 },
          { type: "text", text: `a${n}` },
        ]),
      });
    const results = await Promise.all([turn(1), turn(2), turn(3)]);
    expect(new Set(results.map((r) => r.sessionId)).size).toBe(1);
    expect(rows(results[0]?.sessionId as string)).toEqual([
      "session",
      "user:q1",
      "assistant:a1",
      "user:q2",
      "assistant:a2",
      "user:q3",
      "assistant:a3",
    ]);
    expect(home.agent("main").sessions.get("k")?.entry.turnCount).toBe(3);
  });
});
