import type { AgentState } from "../home.js";
import type { AssistantReply } from "./backend.js";
import type { PreparedAgentRun } from "./prepared-run.js";
import type { RunEventBody, RunStatus, TokenUsage } from "./run-events.js";

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ToolOutcome {
  output: string;
  isError: boolean;
}

/** Tool output above this goes to a tool artifact; the transcript keeps the head and a pointer. */
export const MAX_INLINE_TOOL_OUTPUT = 16 * 1024;
/** Text carried in a `message` or `tool` event; the transcript has the whole of it. */
const MAX_EVENT_TEXT = 4 * 1024;

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The text a `message` event carries for a stored message's text. */
export function messageEventText(text: string): string {
  return clip(text, MAX_EVENT_TEXT);
}

/** What every idempotency key of a run's messages starts with: `<runId>:<n>` is the n-th. */
export function messageKeyPrefix(runId: string): string {
  return `${runId}:`;
}

/**
 * Everything one turn writes, in order: its messages (each with an idempotency key derived
 * from the run id, so a replayed run cannot store a message twice), its events, and at the end
 * the session entry's counters and a run summary. Once the turn's signal has fired, every write
 * throws: nothing reaches the database after a cancel is acknowledged.
 */
export class TurnWriter {
  persisted = 0;
  lastText = "";
  usage: TokenUsage | null = null;
  private messageIndex = 0;

  constructor(
    private readonly agent: AgentState,
    private readonly run: PreparedAgentRun,
    private readonly signal: AbortSignal,
    private readonly emit: (body: RunEventBody) => void,
  ) {}

  user(): void {
    const content = [{ type: "text", text: this.run.input }];
    this.store("user", { role: "user", content, timestamp: Date.now() }, this.run.input);
  }

  assistant(reply: AssistantReply): void {
    const text = reply.content
      .flatMap((block) => (block.type === "text" ? [block.text] : []))
      .join("");
    const message = {
      role: "assistant",
      content: reply.content,
      ...(reply.provider === undefined ? {} : { provider: reply.provider }),
      ...(reply.model === undefined ? {} : { model: reply.model }),
      ...(reply.usage === undefined ? {} : { usage: reply.usage }),
      stopReason: reply.stopReason,
      timestamp: Date.now(),
    };
    this.store("assistant", message, text);
    if (text !== "") this.lastText = text;
  }

  toolCall(call: ToolCall): void {
    this.fence();
    this.emit({
      kind: "tool",
      phase: "call",
      toolCallId: call.id,
      name: call.name,
      arguments: call.arguments,
    });
  }

  toolResult(call: ToolCall, outcome: ToolOutcome): void {
    this.fence();
    let text = outcome.output;
    if (text.length > MAX_INLINE_TOOL_OUTPUT) {
      this.agent.toolArtifacts.put(this.run.runId, call.id, { kind: "text/plain", data: text });
      text = `${text.slice(0, MAX_INLINE_TOOL_OUTPUT)}\n[output truncated; full output in tool artifact ${call.id}]`;
    }
    this.emit({
      kind: "tool",
      phase: "result",
      toolCallId: call.id,
      name: call.name,
      output: clip(outcome.output, MAX_EVENT_TEXT),
      isError: outcome.isError,
    });
    const message = {
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content: [{ type: "text", text }],
      isError: outcome.isError,
      timestamp: Date.now(),
    };
    this.store("toolResult", message, text);
  }

  stream(text: string): void {
    this.fence();
    this.emit({ kind: "stream", text });
  }

  addUsage(usage: TokenUsage): void {
    this.fence();
    const total = this.usage ?? { input: 0, output: 0, totalTokens: 0 };
    this.usage = {
      input: total.input + usage.input,
      output: total.output + usage.output,
      totalTokens: total.totalTokens + usage.totalTokens,
    };
    this.emit({ kind: "usage", ...usage });
  }

  /** Counters on the session entry and a summary artifact, in one transaction. */
  finish(status: RunStatus, startedAt: number): void {
    this.fence();
    const { runId, session } = this.run;
    const now = Date.now();
    this.agent.db.tx(() => {
      this.agent.sessions.patch(session.sessionKey, (entry) => ({
        ...entry,
        turnCount:
          (typeof entry?.turnCount === "number" ? entry.turnCount : 0) +
          (status === "completed" ? 1 : 0),
        lastRunId: runId,
        lastRunStatus: status,
        updatedAt: now,
      }));
      const summary = {
        status,
        sessionId: session.sessionId,
        persisted: this.persisted,
        usage: this.usage,
        startedAt,
        finishedAt: now,
      };
      this.agent.runArtifacts.put(runId, "/run.json", {
        kind: "application/json",
        data: JSON.stringify(summary),
      });
    });
  }

  private store(
    role: "user" | "assistant" | "toolResult",
    message: Record<string, unknown>,
    text: string,
  ): void {
    this.fence();
    const { runId, session } = this.run;
    const stored = this.agent.transcripts.append(
      session.sessionId,
      { type: "message", message },
      {
        idempotencyKey: `${messageKeyPrefix(runId)}${this.messageIndex++}`,
        sessionKey: session.sessionKey,
      },
    );
    if (!stored.deduplicated) this.persisted++;
    this.emit({
      kind: "message",
      role,
      eventId: stored.event.id,
      transcriptSeq: stored.seq,
      text: messageEventText(text),
    });
  }

  private fence(): void {
    if (this.signal.aborted) throw this.signal.reason;
  }
}
