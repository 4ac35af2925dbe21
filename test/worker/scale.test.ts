import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import type { RunEvent, RunResult } from "../../src/worker/run-events.js";
import { type AgentRuntime, createAgentRuntime } from "../../src/worker/runner.js";
import { PROCESS_ENTRY, requireWorkerBuild, useTempDirs, WORKER_ENTRY } from "./support.js";

const SESSIONS = 8;
const TURNS = 200;
const tempDir = useTempDirs();
const runtimes: AgentRuntime[] = [];
beforeAll(requireWorkerBuild);
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

function runtimeFor(home: string, poolSize: number): AgentRuntime {
  const runtime = createAgentRuntime({
    home,
    mode: "worker",
    poolSize,
    workerEntry: WORKER_ENTRY,
    processEntry: PROCESS_ENTRY,
  });
  runtimes.push(runtime);
  return runtime;
}

function textOf(message: unknown): string {
  return (message as { content: Array<{ text: string }> }).content[0]?.text ?? "";
}

describe("many workers, many turns", () => {
  it(`${SESSIONS} workers x ${TURNS} turns on ${SESSIONS} sessions, plus 2 turns racing from another parent`, async () => {
    const home = tempDir();
    const gateway = runtimeFor(home, SESSIONS);
    // A second parent with its own workers and connections: its turns race the first's in SQLite.
    const rival = runtimeFor(home, 2);
    const events = new Map<string, RunEvent[]>();
    const onEvent = (event: RunEvent) => {
      events.set(event.runId, [...(events.get(event.runId) ?? []), event]);
    };
    const turn = (runtime: AgentRuntime, s: number, label: string) =>
      runtime.run({
        agentId: "main",
        session: { sessionKey: `agent:main:s${s}` },
        input: `s${s} q${label}`,
        runId: `s${s}-${label}`,
        backend: { kind: "scripted", steps: [{ type: "text", text: `s${s} a${label}` }] },
        onEvent,
      });
    // The first turn of each session creates it; the rest (and the rival's) queue behind it.
    const pending: Promise<RunResult>[] = [];
    for (let n = 0; n < TURNS; n++) {
      for (let s = 0; s < SESSIONS; s++) pending.push(turn(gateway, s, String(n)));
      if (n === 1) pending.push(turn(rival, 0, "r1"), turn(rival, 0, "r2"));
    }
    const results = await Promise.all(pending);

    expect(results.filter((r) => r.status !== "completed")).toEqual([]);
    expect(new Set(results.map((r) => r.mode))).toEqual(new Set(["thread"]));
    for (const result of results) {
      const seen = events.get(result.runId) ?? [];
      expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
      expect(seen.filter((e) => e.kind === "final")).toHaveLength(1);
      expect(seen.at(-1)).toMatchObject({ kind: "final", status: "completed" });
    }

    const state = openStateHome({ home, create: false });
    const agent = state.agent("main");
    for (let s = 0; s < SESSIONS; s++) {
      const key = `agent:main:s${s}`;
      const sessionId = results.find((r) => r.sessionKey === key)?.sessionId as string;
      expect(new Set(results.filter((r) => r.sessionKey === key).map((r) => r.sessionId))).toEqual(
        new Set([sessionId]),
      );
      const stored = agent.transcripts.read(sessionId, { limit: 10_000 });
      const turns = TURNS + (s === 0 ? 2 : 0);
      expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
      expect(stored).toHaveLength(1 + 2 * turns);
      const texts = stored.slice(1).map((e) => textOf(e.event.message));
      expect(new Set(texts).size).toBe(texts.length);
      // This parent's turns stay in submission order, each question before its answer.
      const own = texts.filter((t) => !t.includes("r"));
      expect(own).toEqual(
        Array.from({ length: TURNS }, (_, n) => [`s${s} q${n}`, `s${s} a${n}`]).flat(),
      );
      if (s === 0) {
        for (const label of ["r1", "r2"]) {
          expect(texts.indexOf(`s0 q${label}`)).toBeGreaterThanOrEqual(0);
          expect(texts.indexOf(`s0 a${label}`)).toBeGreaterThan(texts.indexOf(`s0 q${label}`));
        }
      }
      expect(agent.sessions.get(key)?.entry.turnCount).toBe(turns);
    }
    expect(agent.db.integrityCheck()).toEqual(["ok"]);
    state.close();
  });
});
