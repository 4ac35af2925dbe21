import type { ContextEntry } from "../transcript/context.js";
import type { PreparedAgentRun } from "./prepared-run.js";
import type { TokenUsage } from "./run-events.js";
import type { TurnTools } from "./turn-tools.js";

/** A block of an assistant message, in the transcript's record shape. */
export type AssistantBlock =
  | { type: "text"; text: string }
  | { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown> };

export interface AssistantReply {
  content: AssistantBlock[];
  /** `stop` for a final answer, `toolUse` when tool calls follow. */
  stopReason: "stop" | "toolUse" | "length" | "error";
  provider?: string;
  model?: string;
  usage?: TokenUsage;
}

/**
 * What a backend gets for one turn. Everything it stores goes through here, so the runtime can
 * number events, keep them in order and refuse writes once the turn is cancelled.
 */
export interface BackendTurn {
  readonly run: PreparedAgentRun;
  /** The model context of the session (built from the transcript, this turn's input included). */
  readonly context: readonly ContextEntry[];
  /** File tools and exec over the run's filesystem capability. */
  readonly tools: TurnTools;
  /** Fires on timeout, parent abort or cancel; a backend should stop soon after. */
  readonly signal: AbortSignal;
  /** Streams assistant text to the parent (not stored on its own). */
  stream(text: string): void;
  /** Stores an assistant message in the transcript. Throws once the turn is cancelled. */
  reply(message: AssistantReply): void;
  /** Reports token usage; the run's total is the sum. */
  usage(usage: TokenUsage): void;
}

/**
 * The agent loop of one turn. The runtime appends the user's input before calling it and
 * finishes the turn (counters, run summary, final event) after it resolves; a throw ends the
 * run as `failed`.
 */
export interface AgentRuntimeBackend {
  readonly name: string;
  runTurn(turn: BackendTurn): Promise<void>;
}
