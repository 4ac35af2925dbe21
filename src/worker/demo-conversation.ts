import type { ScriptStep } from "./backend-spec.js";
import type { RunEvent, RunResult } from "./run-events.js";
import { createAgentRuntime, type WorkerMode } from "./runner.js";

export interface DemoConversation {
  sessionId: string;
  sessionKey: string;
  /** One result per turn, in order. */
  turns: RunResult[];
  /** Every event of every turn, as the parent received them. */
  events: RunEvent[];
}

export interface DemoConversationOptions {
  /** Default: `$AGENTSTATE_WORKER_MODE`, else `auto` (worker threads when built). */
  mode?: WorkerMode;
}

const LIST = "- coffee\n- bread\n- tomatoes\n";

/** The demo's turns: what the user says, and the script the assistant follows. */
const TURNS: ReadonlyArray<{ input: string; steps: ScriptStep[] }> = [
  {
    input: "Start a shopping list for the weekend: coffee, bread, tomatoes.",
    steps: [
      { type: "text", text: "Sure, I'll keep it in my scratch space." },
      {
        type: "tool",
        name: "write_file",
        arguments: { path: "/lists/shopping.md", content: LIST },
      },
      { type: "text", text: "Saved /lists/shopping.md with three items." },
    ],
  },
  {
    input: "Add oranges, please.",
    steps: [
      {
        type: "tool",
        name: "write_file",
        arguments: { path: "/lists/shopping.md", content: `${LIST}- oranges\n` },
      },
      { type: "text", text: "Added oranges." },
    ],
  },
  {
    input: "How long is the list now?",
    steps: [
      {
        type: "tool",
        name: "exec",
        arguments: { command: ["wc", "-l", "shopping.md"], cwd: "/lists" },
      },
      { type: "text", text: "Four items: coffee, bread, tomatoes and oranges." },
    ],
  },
];

/**
 * A scripted three-turn conversation run through the worker runtime against a home: file tools
 * on the agent's VFS, an exec in a projected directory, every message stored in the transcript.
 * The CLI's `demo` prints the result; the transcript is then in the home under `sessionId`.
 */
export async function runDemoConversation(
  homePath: string,
  agentId = "main",
  options: DemoConversationOptions = {},
): Promise<DemoConversation> {
  const runtime = createAgentRuntime({
    home: homePath,
    poolSize: 1,
    ...(options.mode ? { mode: options.mode } : {}),
  });
  const sessionKey = `agent:${agentId}:demo`;
  const events: RunEvent[] = [];
  const turns: RunResult[] = [];
  try {
    for (const turn of TURNS) {
      const result = await runtime.run({
        agentId,
        session: { sessionKey },
        input: turn.input,
        backend: { kind: "scripted", steps: turn.steps },
        filesystem: { mode: "vfs-only" },
        // vfs-only exec is a host process in a projected directory: granted explicitly.
        permission: { allowChildProcess: true },
        onEvent: (event) => {
          events.push(event);
        },
      });
      turns.push(result);
    }
  } finally {
    await runtime.close();
  }
  const sessionId = turns[0]?.sessionId ?? "";
  return { sessionId, sessionKey, turns, events };
}
