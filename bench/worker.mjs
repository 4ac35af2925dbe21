// Worker runtime: turn throughput with the scripted backend, inline vs in worker threads, with
// one and two sessions' turns in flight (1 and 2 cores' worth of parallel sessions), against a
// floor of the same rows written by direct store calls. A forked, permission-enforced process
// per turn is measured too, with fewer turns. Rounds interleave the cases.
import { createAgentRuntime, openStateHome } from "../dist/index.js";
import {
  fmtCount,
  fmtRatio,
  median,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const TURNS = QUICK ? 40 : 400;
const PROCESS_TURNS = QUICK ? 4 : 20;
const ROUNDS = QUICK ? 1 : 3;
const WARMUP = QUICK ? 5 : 30;
const OVERHEAD_TARGET_MS = 2;
const SCALING_TARGET = 1.3;
const ANSWER = "A short scripted answer of about sixty characters, in chunks.";
const STEPS = [{ type: "text", text: ANSWER }];

let sessionCounter = 0;

/**
 * `turns` turns spread over `sessions` session keys, each key's turns one after another; with
 * `spread`, each session belongs to its own agent (its own database file).
 */
async function runTurns(runtime, sessions, turns, { spread = false, ...extra } = {}) {
  const keys = Array.from({ length: sessions }, () => `bench:${sessionCounter++}`);
  const perSession = Math.ceil(turns / sessions);
  const t0 = process.hrtime.bigint();
  await Promise.all(
    keys.map(async (sessionKey, s) => {
      for (let i = 0; i < perSession; i++) {
        const result = await runtime.run({
          agentId: spread ? `agent-${s}` : "main",
          session: { sessionKey },
          input: `question ${i}`,
          backend: { kind: "scripted", steps: STEPS },
          ...extra,
        });
        if (result.status !== "completed")
          throw new Error(`turn ${result.status}: ${result.failure?.message}`);
      }
    }),
  );
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  return { turns: perSession * sessions, ms };
}

/** The rows one turn writes, by direct store calls on one connection: no events, no worker. */
function floorTurns(agent, turns) {
  const sessionKey = `bench:${sessionCounter++}`;
  const { sessionId } = agent.lifecycle.ensure(sessionKey);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < turns; i++) {
    const runId = `floor-${sessionCounter}-${i}`;
    const user = { role: "user", content: [{ type: "text", text: `question ${i}` }] };
    agent.transcripts.append(
      sessionId,
      { type: "message", message: user },
      { idempotencyKey: `${runId}:0` },
    );
    const reply = {
      role: "assistant",
      content: [{ type: "text", text: ANSWER }],
      stopReason: "stop",
    };
    agent.transcripts.append(
      sessionId,
      { type: "message", message: reply },
      { idempotencyKey: `${runId}:1` },
    );
    agent.db.tx(() => {
      agent.sessions.patch(sessionKey, (e) => ({
        ...e,
        turnCount: (e?.turnCount ?? 0) + 1,
        lastRunId: runId,
      }));
      agent.runArtifacts.put(runId, "/run.json", { kind: "application/json", data: "{}" });
    });
  }
  return { turns, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

async function measure(home) {
  const state = openStateHome({ home });
  const agent = state.agent("main");
  const inline = createAgentRuntime({ home, mode: "inline" });
  const worker1 = createAgentRuntime({ home, mode: "worker", poolSize: 1 });
  const worker2 = createAgentRuntime({ home, mode: "worker", poolSize: 2 });
  const cases = {
    floor: () => floorTurns(agent, TURNS),
    "inline, 1 session": () => runTurns(inline, 1, TURNS),
    "inline, 2 sessions": () => runTurns(inline, 2, TURNS),
    "worker, 1 session": () => runTurns(worker1, 1, TURNS),
    "worker, 2 sessions": () => runTurns(worker2, 2, TURNS),
    "inline, 2 sessions on 2 agents": () => runTurns(inline, 2, TURNS, { spread: true }),
    "worker, 2 sessions on 2 agents": () => runTurns(worker2, 2, TURNS, { spread: true }),
    "process + seatbelt, 1 session": () =>
      runTurns(worker1, 1, PROCESS_TURNS, { permission: { mode: "enforce" } }),
  };
  progress(`worker: warm-up (${WARMUP} turns per case)`);
  await runTurns(inline, 1, WARMUP);
  await runTurns(worker1, 1, WARMUP);
  await runTurns(worker2, 2, WARMUP);
  await runTurns(worker2, 2, WARMUP, { spread: true });
  const perTurn = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, fn] of Object.entries(cases)) {
      progress(`worker: round ${round + 1}/${ROUNDS}, ${name}`);
      const { turns, ms } = await fn();
      perTurn[name].push(ms / turns);
    }
  }
  await Promise.all([inline.close(), worker1.close(), worker2.close()]);
  state.close();
  return Object.fromEntries(Object.entries(perTurn).map(([name, ms]) => [name, median(ms)]));
}

export async function run() {
  const ms = await withTempDir("worker", (dir) => measure(dir));
  const rate = (name) => 1000 / ms[name];
  const overhead = ms["worker, 1 session"] - ms["inline, 1 session"];
  const scaling = rate("worker, 2 sessions on 2 agents") / rate("worker, 1 session");
  const sameAgent = rate("worker, 2 sessions") / rate("worker, 1 session");
  const rows = Object.keys(ms).map((name) => [
    name,
    fmtCount(rate(name)),
    ms[name].toFixed(2),
    fmtRatio(rate(name) / rate("inline, 1 session")),
  ]);
  const targets = [
    {
      name: `worker per-turn overhead over inline ≤ ${OVERHEAD_TARGET_MS} ms (1 session)`,
      value: `${overhead.toFixed(2)} ms`,
      met: overhead <= OVERHEAD_TARGET_MS,
    },
    {
      name: `2 agents' sessions in 2 worker threads ≥ ${SCALING_TARGET}× the turns/s of 1 session`,
      value: `${fmtRatio(scaling)}×`,
      met: scaling >= SCALING_TARGET,
    },
  ];
  const markdown = [
    "## Worker runtime",
    "",
    "One turn = `runtime.run()` with the scripted backend: store the user's message, stream a",
    "60-character answer in 4 chunks, store it, patch the session entry's counters and write the",
    "run summary artifact, with every event delivered to the parent in order. **inline** runs in",
    "the caller's thread; **worker** in a pool of worker threads (1 or 2), each with its own",
    "connection; **process + seatbelt** forks a process per turn under Node's permission model.",
    "**floor** = the same rows by direct store calls on one connection (no events, no runtime).",
    `“N sessions” = N session keys with turns in flight at once (each key's turns in order). ${TURNS}`,
    `turns per case and round (${PROCESS_TURNS} for process), median of ${ROUNDS} interleaved rounds.`,
    "",
    table(["case", "turns/s", "ms per turn", "÷ inline, 1 session"], rows),
    "",
    `Worker overhead per turn (worker − inline, 1 session): **${overhead.toFixed(2)} ms**;`,
    `a forked process per turn costs **${(ms["process + seatbelt, 1 session"] - ms["inline, 1 session"]).toFixed(0)} ms** more than inline.`,
    `Two sessions on two worker threads: **${fmtRatio(scaling)}×** the turns/s of one when they`,
    `belong to two agents (two database files), **${fmtRatio(sameAgent)}×** when they share one agent's`,
    "database: its writes take turns on SQLite's single writer lock, and a writer that finds it",
    "taken sleeps in SQLite's busy handler. The worker threads and the parent share the machine's",
    "cores with whatever else runs there (see the load average above).",
  ].join("\n");
  return { name: "worker", markdown, targets };
}

await runIfMain(import.meta.url, run);
