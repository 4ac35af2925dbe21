import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import type { MessageEvent, RunEvent, RunResult } from "../../src/worker/run-events.js";
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

const LOSSY_ENTRY = fileURLToPath(new URL("../fixtures/lossy-worker-entry.mjs", import.meta.url));

const tempDir = useTempDirs();
let homePath: string;
let runtime: AgentRuntime;
beforeAll(requireWorkerBuild);
afterEach(() => runtime?.close());

function setup(options: Partial<AgentRuntimeOptions> = {}): void {
  homePath = tempDir();
  runtime = createAgentRuntime({
    home: homePath,
    mode: "worker",
    poolSize: 1,
    cancelGraceMs: 500,
    workerEntry: WORKER_ENTRY,
    processEntry: PROCESS_ENTRY,
    ...options,
  });
}

async function turn(
  death: "hang" | "exit" | "oom",
  extra: Record<string, unknown> = {},
): Promise<{ result: RunResult; events: RunEvent[] }> {
  const events: RunEvent[] = [];
  const result = await runtime.run({
    agentId: "main",
    session: { sessionKey: "dying" },
    input: "go",
    backend: fixtureBackend("store-then-die", { death }),
    // Long enough for a loaded machine to start the worker and reach the backend.
    timeoutMs: 4000,
    onEvent: (event) => {
      events.push(event);
    },
    ...extra,
  });
  return { result, events };
}

/** The oracle: the session's message rows, read with plain SQL from the agent's database file. */
function storedMessageSeqs(sessionId: string): number[] {
  const db = openRawSqlite(join(homePath, "agents", "main", "agent", "agent.sqlite"), {
    readonly: true,
  });
  try {
    return db
      .prepare(
        `SELECT seq FROM agentstate_events_v1
         WHERE session_id = ? AND event_type = 'message' ORDER BY seq`,
      )
      .pluck()
      .all(sessionId) as number[];
  } finally {
    db.close();
  }
}

/** Every stored row was announced, in transcript order, between `start` and `end`/`final`. */
function expectAccounted(result: RunResult, events: RunEvent[]): void {
  const seqs = storedMessageSeqs(result.sessionId);
  // user "go", assistant "first", assistant "second": the backend died after storing them.
  expect(seqs).toHaveLength(3);
  expect(result.persisted).toBe(seqs.length);
  const messages = events.filter((e): e is MessageEvent => e.kind === "message");
  expect(messages.map((e) => e.transcriptSeq)).toEqual(seqs);
  expect(messages.map((e) => `${e.role}:${e.text}`)).toEqual([
    "user:go",
    "assistant:first",
    "assistant:second",
  ]);
  expect(events[0]).toMatchObject({ kind: "lifecycle", phase: "start" });
  const end = events.findIndex((e) => e.kind === "lifecycle" && e.phase === "end");
  expect(events.indexOf(messages.at(-1) as RunEvent)).toBeLessThan(end);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.slice(end).map((e) => e.kind)).toEqual(["lifecycle", "final"]);
}

describe("a worker that dies right after storing accounts for every row", () => {
  it("a busy loop that ignores the cancel: timed out, forced, all three rows", async () => {
    setup();
    const { result, events } = await turn("hang");
    expect(result).toMatchObject({
      status: "timed_out",
      mode: "thread",
      failure: { kind: "timeout", forced: true },
    });
    expectAccounted(result, events);
  });

  it("process.exit() in the worker thread", async () => {
    setup();
    const { result, events } = await turn("exit");
    expect(result).toMatchObject({ status: "crashed", failure: { kind: "exit", exitCode: 1 } });
    expectAccounted(result, events);
  });

  it("out of memory under resourceLimits", async () => {
    setup({ resourceLimits: { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 8 } });
    const { result, events } = await turn("oom");
    expect(result).toMatchObject({ status: "crashed", failure: { kind: "out-of-memory" } });
    expectAccounted(result, events);
  });

  it("process mode: a run process that exits", async () => {
    setup();
    const { result, events } = await turn("exit", { permission: { mode: "enforce" } });
    expect(result).toMatchObject({
      status: "crashed",
      mode: "process",
      failure: { kind: "exit", exitCode: 1 },
    });
    expectAccounted(result, events);
  });

  for (const death of ["exit", "hang"] as const) {
    it(`events lost in transit are read back from the database (${death})`, async () => {
      setup({ workerEntry: LOSSY_ENTRY });
      const { result, events } = await turn(death);
      expect(result.status).toBe(death === "exit" ? "crashed" : "timed_out");
      expectAccounted(result, events);
    });
  }

  it("a rerun of the same run id counts only the rows it added", async () => {
    setup({ workerEntry: LOSSY_ENTRY });
    const first = await turn("exit", { runId: "again" });
    expect(first.result.persisted).toBe(3);
    // Every message of the rerun matches an idempotency key of the first attempt: nothing new.
    const { result, events } = await turn("exit", { runId: "again" });
    expect(result).toMatchObject({ status: "crashed", persisted: 0 });
    expect(storedMessageSeqs(result.sessionId)).toHaveLength(3);
    expect(events.filter((e) => e.kind === "message")).toEqual([]);
  });

  it("the parent hears each stored message while the worker is still blocked", async () => {
    setup();
    const controller = new AbortController();
    const events: RunEvent[] = [];
    // Only a message that left the worker before its busy loop can trigger this abort: one read
    // back from the database arrives after the worker is gone, when the timeout has ended the run.
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "heard-live" },
      input: "go",
      backend: fixtureBackend("store-then-die", { death: "hang" }),
      timeoutMs: 6000,
      signal: controller.signal,
      onEvent: (event) => {
        events.push(event);
        if (event.kind === "message" && event.text === "second") controller.abort();
      },
    });
    expect(result).toMatchObject({ status: "aborted", failure: { kind: "aborted", forced: true } });
    expectAccounted(result, events);
  });
});
