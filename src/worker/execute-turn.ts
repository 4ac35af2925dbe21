import { isStateError } from "../db/errors.js";
import type { AgentState } from "../home.js";
import type { ContextEntry } from "../transcript/context.js";
import type { AgentRuntimeBackend, BackendTurn } from "./backend.js";
import { cancelledOutcome, isRunCancelled, RunCancelled } from "./cancel.js";
import { FsCapability } from "./fs-capability.js";
import type { PreparedAgentRun } from "./prepared-run.js";
import type {
  ExecutionMode,
  RunEvent,
  RunEventBody,
  RunFailure,
  RunStatus,
  TokenUsage,
} from "./run-events.js";
import { TurnTools } from "./turn-tools.js";
import { TurnWriter } from "./turn-writer.js";

/** How a turn ended, before the parent adds who ran it and where. */
export interface TurnOutcome {
  status: RunStatus;
  text: string;
  usage: TokenUsage | null;
  persisted: number;
  failure: RunFailure | null;
}

export interface TurnDeps {
  agent: AgentState;
  /** The caller's live object (inline), or a loader that builds one from the run's spec. */
  backend: AgentRuntimeBackend | (() => Promise<AgentRuntimeBackend>);
  signal: AbortSignal;
  mode: ExecutionMode;
  post: (event: RunEvent) => void;
}

/** Numbers events 1, 2, 3 … per run: the order the parent will see them in. */
export function eventStamper(runId: string, post: (event: RunEvent) => void) {
  let seq = 0;
  return (body: RunEventBody): void =>
    post({ ...body, runId, seq: ++seq, at: Date.now() } as RunEvent);
}

function failureOf(error: unknown, kind: RunFailure["kind"]): RunFailure {
  const message = error instanceof Error ? error.message : String(error);
  const code = isStateError(error) ? error.code : (error as { code?: unknown } | null)?.code;
  return { kind, message, ...(typeof code === "string" ? { code } : {}) };
}

/** Rejects when the signal fires, so a backend that ignores it cannot hold the turn open. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

function backendTurn(run: PreparedAgentRun, deps: TurnDeps, writer: TurnWriter): BackendTurn {
  const vfs = deps.agent.vfs.namespace(run.filesystem.namespace);
  const allowExec = run.filesystem.mode !== "vfs-only" || run.permission.allowChildProcess;
  const fs = new FsCapability(run.filesystem, vfs, allowExec);
  let context: ContextEntry[] | undefined;
  return {
    run,
    tools: new TurnTools(fs, writer, deps.signal),
    signal: deps.signal,
    // Built on first use: a backend that does not read the context does not pay for it.
    get context() {
      context ??= deps.agent.branches.context(run.session.sessionId);
      return context;
    },
    stream: (text) => writer.stream(text),
    reply: (message) => writer.assistant(message),
    usage: (usage) => writer.addUsage(usage),
  };
}

/**
 * One turn, wherever it runs: store the input, run the backend against a context built from the
 * transcript, then finish the session's counters, and emit lifecycle and final events around it.
 * The same code runs inline and inside a worker, so the two modes store the same rows.
 */
export async function executeTurn(run: PreparedAgentRun, deps: TurnDeps): Promise<TurnOutcome> {
  const emit = eventStamper(run.runId, deps.post);
  const writer = new TurnWriter(deps.agent, run, deps.signal, emit);
  const startedAt = Date.now();
  emit({ kind: "lifecycle", phase: "start", mode: deps.mode });
  let status: RunStatus = "completed";
  let failure: RunFailure | null = null;
  let phase: RunFailure["kind"] = "setup";
  try {
    writer.user();
    const backend = typeof deps.backend === "function" ? await deps.backend() : deps.backend;
    phase = "backend";
    const turn = backendTurn(run, deps, writer);
    // Through a promise, so a backend that throws synchronously fails the same way.
    const running = Promise.resolve().then(() => backend.runTurn(turn));
    // A backend still running after a cancel must not surface later as an unhandled rejection.
    running.catch(() => {});
    await Promise.race([running, whenAborted(deps.signal)]);
    writer.finish(status, startedAt);
  } catch (error) {
    if (deps.signal.aborted) {
      const reason = deps.signal.reason;
      const cancel = isRunCancelled(reason) ? reason : new RunCancelled("aborted", String(reason));
      ({ status, failure } = cancelledOutcome(cancel.kind, cancel.message));
    } else {
      status = "failed";
      failure = failureOf(error, phase);
      try {
        writer.finish(status, startedAt);
      } catch {
        // The failure itself is what the caller needs; a counter that could not be written is not.
      }
    }
  }
  emit({ kind: "lifecycle", phase: "end", mode: deps.mode });
  emit({ kind: "final", status, text: writer.lastText, failure });
  return {
    status,
    text: writer.lastText,
    usage: writer.usage,
    persisted: writer.persisted,
    failure,
  };
}
