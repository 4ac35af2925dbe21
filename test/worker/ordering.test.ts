import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/worker/run-events.js";
import { type AgentRuntime, createAgentRuntime } from "../../src/worker/runner.js";
import { PROCESS_ENTRY, requireWorkerBuild, useTempDirs, WORKER_ENTRY } from "./support.js";

const tempDir = useTempDirs();
let runtime: AgentRuntime;
beforeAll(requireWorkerBuild);
afterEach(() => runtime?.close());

describe("event delivery", () => {
  it("a handler that awaits a random delay still sees every event once, in worker order", async () => {
    runtime = createAgentRuntime({
      home: tempDir(),
      mode: "worker",
      poolSize: 4,
      workerEntry: WORKER_ENTRY,
      processEntry: PROCESS_ENTRY,
    });
    const text = Array.from({ length: 120 }, (_, i) => `w${i} `).join("");
    const byRun = new Map<string, RunEvent[]>();
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        runtime.run({
          agentId: "main",
          session: { sessionKey: `session-${n}` },
          input: `question ${n}`,
          backend: { kind: "scripted", steps: [{ type: "text", text, chunkSize: 4 }] },
          onEvent: async (event) => {
            await sleep(Math.floor(Math.random() * 3));
            byRun.set(event.runId, [...(byRun.get(event.runId) ?? []), event]);
          },
        }),
      ),
    );
    for (const result of results) {
      expect(result).toMatchObject({ status: "completed", mode: "thread" });
      const events = byRun.get(result.runId) ?? [];
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const streamed = events.flatMap((e) => (e.kind === "stream" ? [e.text] : [])).join("");
      expect(streamed).toBe(text);
      const kinds = events.map((e) => e.kind);
      expect(kinds.slice(0, 2)).toEqual(["lifecycle", "message"]);
      expect(kinds.slice(-4)).toEqual(["message", "usage", "lifecycle", "final"]);
    }
  });
});
