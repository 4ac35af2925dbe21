/** Where a turn ran: in the caller's thread, a worker thread, or a forked process. */
export type ExecutionMode = "inline" | "thread" | "process";

export type RunStatus = "completed" | "failed" | "timed_out" | "aborted" | "crashed";

/**
 * Why a run did not complete. `backend` and `setup` end as `failed`, `timeout` as `timed_out`,
 * `aborted` as `aborted`; a worker that died (`exit`, `uncaught`, `out-of-memory`) as `crashed`.
 * `handler` is a parent event handler that threw: the run is cancelled and ends `failed`.
 */
export type RunFailureKind =
  | "backend"
  | "setup"
  | "handler"
  | "timeout"
  | "aborted"
  | "exit"
  | "uncaught"
  | "out-of-memory";

export interface RunFailure {
  kind: RunFailureKind;
  message: string;
  /** The StateError code (or Node error code) behind the failure, when there was one. */
  code?: string;
  /** The worker's exit code, for `exit`. */
  exitCode?: number;
  /** The worker did not acknowledge the cancel in time and was terminated. */
  forced?: boolean;
}

export interface TokenUsage {
  input: number;
  output: number;
  totalTokens: number;
}

interface EventBase {
  runId: string;
  /** 1, 2, 3 … in the order the worker emitted them; the bus delivers in this order. */
  seq: number;
  /** Unix ms when emitted. */
  at: number;
}

export interface LifecycleEvent extends EventBase {
  kind: "lifecycle";
  phase: "start" | "end";
  mode: ExecutionMode;
}

/** A message the turn stored in the transcript (read back by the parent when its worker died). */
export interface MessageEvent extends EventBase {
  kind: "message";
  role: "user" | "assistant" | "toolResult";
  eventId: string;
  /** The transcript seq of the stored event. */
  transcriptSeq: number;
  text: string;
}

/** A piece of assistant text as it streams; the whole message follows as a `message` event. */
export interface StreamEvent extends EventBase {
  kind: "stream";
  text: string;
}

export interface ToolEvent extends EventBase {
  kind: "tool";
  phase: "call" | "result";
  toolCallId: string;
  name: string;
  /** The call's arguments (`call`) or the tool's output (`result`). */
  arguments?: Record<string, unknown>;
  output?: string;
  isError?: boolean;
}

export interface UsageEvent extends EventBase, TokenUsage {
  kind: "usage";
}

/** The last event of every run, also when the parent had to write it for a dead worker. */
export interface FinalEvent extends EventBase {
  kind: "final";
  status: RunStatus;
  text: string;
  failure: RunFailure | null;
}

export type RunEvent =
  | LifecycleEvent
  | MessageEvent
  | StreamEvent
  | ToolEvent
  | UsageEvent
  | FinalEvent;

/** An event before the emitter stamps it with `runId`, `seq` and `at`. */
export type RunEventBody = WithoutBase<RunEvent>;
type WithoutBase<E> = E extends RunEvent ? Omit<E, keyof EventBase> : never;

/** A field of the run's input that cannot cross to a worker, by its path (`metadata.reply`). */
export interface RunBlocker {
  path: string;
  reason: string;
}

/** How one turn ended. Returned, never thrown: a dead worker is a result, not an exception. */
export interface RunResult {
  status: RunStatus;
  runId: string;
  agentId: string;
  sessionId: string;
  sessionKey: string;
  mode: ExecutionMode;
  /** The last assistant message's text ("" when there was none). */
  text: string;
  usage: TokenUsage | null;
  /**
   * Transcript events this run stored; for a worker that died, read back from the database.
   * Nothing is written after a cancel is acknowledged.
   */
  persisted: number;
  failure: RunFailure | null;
  /** Why an `auto` run ran inline instead of in a worker (empty otherwise). */
  blockers: RunBlocker[];
}
