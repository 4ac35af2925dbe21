import type { TurnOutcome } from "./execute-turn.js";
import type { RunEventHandler } from "./prepared-run.js";
import type { ExecutionMode, MessageEvent, RunEvent } from "./run-events.js";

/** A stored message as a `message` event before the bus numbers it. */
export type StoredMessage = Pick<MessageEvent, "role" | "eventId" | "transcriptSeq" | "text">;

/**
 * Delivers one run's events to a parent handler strictly in the worker's order (by `seq`; an
 * event that arrives early waits for the ones before it, a repeat is dropped), awaiting each
 * handler call before the next. When the handler throws, later events are no longer delivered
 * and `onHandlerError` fires once, so the runner can cancel the run.
 */
export class RunEventBus {
  /** Messages the worker reported storing: the count left when a worker dies mid-run. */
  messages = 0;
  /** The handler threw: later events are counted but no longer handed to it. */
  handlerFailed = false;
  onHandlerError: ((error: unknown) => void) | null = null;
  private lastSeq = 0;
  private finalSeen = false;
  private readonly early = new Map<number, RunEvent>();
  /** Event ids of the stored messages delivered so far. */
  private readonly heard = new Set<string>();
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly handler?: RunEventHandler) {}

  get delivered(): number {
    return this.lastSeq;
  }

  push(event: RunEvent): void {
    if (event.seq <= this.lastSeq || this.early.has(event.seq)) return;
    this.early.set(event.seq, event);
    for (
      let next = this.early.get(this.lastSeq + 1);
      next;
      next = this.early.get(this.lastSeq + 1)
    ) {
      this.early.delete(next.seq);
      this.deliver(next);
    }
  }

  /**
   * Ends the run's stream: events still waiting for a gap that will never fill go out in order,
   * and when the worker died before its final event, the parent writes `lifecycle end` and
   * `final` itself, so every run ends with exactly one final event.
   */
  close(runId: string, outcome: TurnOutcome, mode: ExecutionMode): void {
    this.flushEarly();
    if (this.finalSeen) return;
    const at = Date.now();
    this.deliver({ kind: "lifecycle", phase: "end", mode, runId, seq: this.lastSeq + 1, at });
    this.deliver({
      kind: "final",
      status: outcome.status,
      text: outcome.text,
      failure: outcome.failure,
      runId,
      seq: this.lastSeq + 1,
      at,
    });
  }

  /**
   * After a worker died: delivers the messages it stored (read back from the database, in
   * transcript order) that it never reported, numbered after what was heard, so the handler
   * sees every stored row before `close` writes `end` and `final`. When nothing at all was
   * heard, `lifecycle start` goes first, so the stream still opens the way every run's does.
   */
  recover(runId: string, stored: readonly StoredMessage[], mode: ExecutionMode): void {
    this.flushEarly();
    if (this.finalSeen) return;
    const at = Date.now();
    if (this.lastSeq === 0) {
      this.deliver({ kind: "lifecycle", phase: "start", mode, runId, seq: 1, at });
    }
    for (const message of stored) {
      if (this.heard.has(message.eventId)) continue;
      this.deliver({ kind: "message", ...message, runId, seq: this.lastSeq + 1, at });
    }
  }

  /** Resolves when the handler has returned for every event pushed so far. */
  drain(): Promise<void> {
    return this.tail;
  }

  /** Events still waiting for a gap that will never fill go out in order. */
  private flushEarly(): void {
    for (const seq of [...this.early.keys()].sort((a, b) => a - b)) {
      this.deliver(this.early.get(seq) as RunEvent);
    }
    this.early.clear();
  }

  private deliver(event: RunEvent): void {
    this.lastSeq = event.seq;
    if (event.kind === "message") {
      this.messages++;
      this.heard.add(event.eventId);
    }
    if (event.kind === "final") this.finalSeen = true;
    const handler = this.handler;
    if (!handler) return;
    this.tail = this.tail
      .then(() => (this.handlerFailed ? undefined : handler(event)))
      .catch((error: unknown) => {
        if (this.handlerFailed) return;
        this.handlerFailed = true;
        this.onHandlerError?.(error);
      });
  }
}
