import type { AgentState } from "../home.js";
import type { KeyedEvent } from "../stores/agent/transcript-store.js";
import type { PreparedAgentRun } from "./prepared-run.js";
import type { RunEventBus, StoredMessage } from "./run-event-bus.js";
import type { ExecutionMode } from "./run-events.js";
import { messageEventText, messageKeyPrefix } from "./turn-writer.js";

const ROLES = new Set(["user", "assistant", "toolResult"]);

function asStoredMessage(stored: KeyedEvent): StoredMessage | null {
  const message = stored.event.message as { role?: unknown; content?: unknown } | undefined;
  if (typeof message?.role !== "string" || !ROLES.has(message.role)) return null;
  const blocks = Array.isArray(message.content) ? (message.content as unknown[]) : [];
  const text = blocks
    .flatMap((block) => {
      const { type, text } = (block ?? {}) as { type?: unknown; text?: unknown };
      return type === "text" && typeof text === "string" ? [text] : [];
    })
    .join("");
  return {
    role: message.role as StoredMessage["role"],
    eventId: stored.event.id,
    transcriptSeq: stored.seq,
    text: messageEventText(text),
  };
}

/**
 * The transcript rows one run stores, told apart from everything else in its session: written
 * after the tail the session had when the run was dispatched (a rerun of a run id whose messages
 * were already stored adds none), under the run's own idempotency keys `<runId>:<n>` (so no
 * other writer's events count). A dead worker cannot say what it stored; the database can.
 */
export class RunRows {
  private readonly afterSeq: number;

  constructor(
    private readonly agent: AgentState,
    private readonly run: PreparedAgentRun,
  ) {
    this.afterSeq = agent.transcripts.tail(run.session.sessionId, 1)[0]?.seq ?? 0;
  }

  /** The run's stored messages, in transcript order. */
  messages(): StoredMessage[] {
    const prefix = messageKeyPrefix(this.run.runId);
    return this.agent.transcripts
      .readKeyed(this.run.session.sessionId, prefix, this.afterSeq)
      .filter((stored) => /^\d+$/.test(stored.idempotencyKey.slice(prefix.length)))
      .flatMap((stored) => asStoredMessage(stored) ?? []);
  }

  /**
   * Once the run's worker is dead: hands `bus` the stored messages it never heard about and
   * returns how many the run stored. When the database cannot be read, what the worker reported
   * is all there is to go on.
   */
  readBack(bus: RunEventBus, mode: ExecutionMode): number {
    let stored: StoredMessage[];
    try {
      stored = this.messages();
    } catch {
      return bus.messages;
    }
    bus.recover(this.run.runId, stored, mode);
    return stored.length;
  }
}
