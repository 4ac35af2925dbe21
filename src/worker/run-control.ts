import { type CancelKind, RunCancelled } from "./cancel.js";

function abortMessage(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return `aborted by the caller: ${reason.message}`;
  return reason === undefined
    ? "aborted by the caller"
    : `aborted by the caller: ${String(reason)}`;
}

/**
 * The three ways the parent cancels a run (its timeout, the caller's signal, a failing event
 * handler), reduced to one `onCancel` call. The timeout starts when the run starts, not while it
 * waits for a worker or for the turn before it on the same session.
 */
export class RunControl {
  cancelled: RunCancelled | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;

  constructor(
    timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly onCancel: (cancel: RunCancelled) => void,
  ) {
    this.timer = setTimeout(
      () => this.cancel("timeout", `the run exceeded its timeout of ${timeoutMs} ms`),
      timeoutMs,
    );
    this.onAbort = () => this.cancel("aborted", abortMessage(signal as AbortSignal));
    signal?.addEventListener("abort", this.onAbort, { once: true });
    if (signal?.aborted) this.onAbort();
  }

  cancel(kind: CancelKind, message: string): void {
    if (this.cancelled) return;
    this.cancelled = new RunCancelled(kind, message);
    this.onCancel(this.cancelled);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.signal?.removeEventListener("abort", this.onAbort);
  }
}
