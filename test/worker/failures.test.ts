import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../../src/home.js";
import type { BackendSpec } from "../../src/worker/backend-spec.js";
import type { RunEvent, RunResult } from "../../src/worker/run-events.js";
import {
  type AgentRuntime,
  type AgentRuntimeOptions,
  createAgentRuntime,
} from "../../src/worker/runner.js";
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

function setup(options: Partial<AgentRuntimeOptions> = {}): void {
  home = openStateHome({ home: tempDir() });
  runtime = createAgentRuntime({
    home: home.path,
    mode: "worker",
    poolSize: 2,
    cancelGraceMs: 500,
    workerEntry: WORKER_ENTRY,
    processEntry: PROCESS_ENTRY,
    ...options,
  });
}

async function turn(
  backend: BackendSpec,
  extra: Record<string, unknown> = {},
): Promise<{ result: RunResult; events: RunEvent[] }> {
  const events: RunEvent[] = [];
  const result = await runtime.run({
    agentId: "main",
    session: { sessionKey: `k-${Math.random()}` },
    input: "go",
    backend,
    onEvent: (event) => {
      events.push(event);
    },
    ...extra,
  });
  return { result, events };
}

/** The transcript's messages, as role:text. */
function messages(sessionId: string): string[] {
  return home
    .agent("main")
    .transcripts.read(sessionId)
    .slice(1)
    .map((e) => {
      const message = e.event.message as { role: string; content: Array<{ text: string }> };
      return `${message.role}:${message.content[0]?.text}`;
    });
}

/** After any failure, the same runtime still runs a clean turn in a worker. */
async function expectHealthy(): Promise<void> {
  const { result } = await turn({
    kind: "scripted",
    steps: [{ type: "text", text: "still here" }],
  });
  expect(result).toMatchObject({ status: "completed", mode: "thread", text: "still here" });
}

function expectOneFinalLast(events: RunEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.kind === "final")).toHaveLength(1);
  expect(events.at(-1)?.kind).toBe("final");
}

describe("worker runs that do not complete", () => {
  it("timeout: a slow backend ends timed_out and stores nothing after its input", async () => {
    setup();
    const { result, events } = await turn(
      {
        kind: "scripted",
        steps: [
          { type: "wait", ms: 30_000 },
          { type: "text", text: "late" },
        ],
      },
      { timeoutMs: 200 },
    );
    expect(result).toMatchObject({
      status: "timed_out",
      mode: "thread",
      persisted: 1,
      failure: { kind: "timeout" },
    });
    expect(result.failure?.forced).toBeUndefined();
    expect(messages(result.sessionId)).toEqual(["user:go"]);
    expectOneFinalLast(events);
    expect(events.at(-1)).toMatchObject({ status: "timed_out" });
    await expectHealthy();
  });

  it("timeout: a backend that blocks its thread is terminated after the grace period", async () => {
    setup();
    // Long enough for the worker to start and reach its busy loop on a loaded machine: a
    // timeout before that is honoured cooperatively and is not what this test is about.
    const { result, events } = await turn(fixtureBackend("hang"), { timeoutMs: 2000 });
    expect(events).toContainEqual(expect.objectContaining({ kind: "stream", text: "spinning" }));
    expect(result).toMatchObject({
      status: "timed_out",
      failure: { kind: "timeout", forced: true },
    });
    expectOneFinalLast(events);
    await expectHealthy();
  });

  it("abort mid-stream: the worker's own signal fires and the run ends aborted", async () => {
    setup();
    const controller = new AbortController();
    const { result, events } = await turn(
      {
        kind: "scripted",
        steps: [{ type: "text", text: "x".repeat(5000), chunkSize: 10, delayMs: 20 }],
      },
      {
        signal: controller.signal,
        onEvent: (event: RunEvent) => {
          if (event.kind === "stream") controller.abort();
        },
      },
    );
    expect(result).toMatchObject({ status: "aborted", persisted: 1, failure: { kind: "aborted" } });
    expect(messages(result.sessionId)).toEqual(["user:go"]);
    expect(events.filter((e) => e.kind === "stream").length).toBeLessThan(500);
    await expectHealthy();
  });

  it("a backend that ignores the cancel cannot store anything after it", async () => {
    setup();
    const controller = new AbortController();
    const events: RunEvent[] = [];
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "stubborn" },
      input: "go",
      backend: fixtureBackend("stubborn", { parts: 40, everyMs: 15 }),
      signal: controller.signal,
      onEvent: (event) => {
        events.push(event);
        if (event.kind === "message" && event.text === "part 2") controller.abort();
      },
    });
    expect(result.status).toBe("aborted");
    const stored = messages(result.sessionId);
    expect(stored.length).toBe(result.persisted);
    await sleep(300);
    expect(messages(result.sessionId)).toEqual(stored);
    expect(stored).toEqual(["user:go", ...stored.slice(1).map((_, i) => `assistant:part ${i}`)]);
    expectOneFinalLast(events);
    await expectHealthy();
  });

  it("a backend that throws ends failed with its message", async () => {
    setup();
    const { result, events } = await turn(fixtureBackend("throw"));
    expect(result).toMatchObject({
      status: "failed",
      failure: { kind: "backend", message: "the backend gave up" },
    });
    expectOneFinalLast(events);
    await expectHealthy();
  });

  it("an uncaught throw kills the worker: crashed, and the parent writes the final event", async () => {
    setup();
    const { result, events } = await turn(fixtureBackend("uncaught"));
    expect(result).toMatchObject({
      status: "crashed",
      persisted: 1,
      failure: { kind: "uncaught", message: "thrown from a timer" },
    });
    expectOneFinalLast(events);
    await expectHealthy();
  });

  it("process.exit(1) in the worker: crashed with the exit code", async () => {
    setup();
    const { result, events } = await turn(fixtureBackend("exit"));
    expect(result).toMatchObject({ status: "crashed", failure: { kind: "exit", exitCode: 1 } });
    expectOneFinalLast(events);
    await expectHealthy();
  });

  it("a memory blow-up under resourceLimits: crashed, out-of-memory", async () => {
    setup({ resourceLimits: { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 8 } });
    const { result, events } = await turn(fixtureBackend("oom"));
    expect(result).toMatchObject({ status: "crashed", failure: { kind: "out-of-memory" } });
    expectOneFinalLast(events);
    await expectHealthy();
  });

  it("process mode: a run process that exits is a crashed result too", async () => {
    setup();
    const { result, events } = await turn(fixtureBackend("exit"), {
      permission: { mode: "enforce" },
    });
    expect(result).toMatchObject({
      status: "crashed",
      mode: "process",
      failure: { kind: "exit", exitCode: 1 },
    });
    expectOneFinalLast(events);
    await expectHealthy();
  });
});
