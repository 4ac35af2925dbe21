import type { RunFailure, RunStatus } from "./run-events.js";

/** Why the parent cancelled a run: its timeout, the caller's signal, or a failing event handler. */
export type CancelKind = "timeout" | "aborted" | "handler";

/** The reason a run's AbortSignal carries, on both sides of the worker boundary. */
export class RunCancelled extends Error {
  override readonly name = "RunCancelled";

  constructor(
    readonly kind: CancelKind,
    message: string,
  ) {
    super(message);
  }
}

export function isRunCancelled(value: unknown): value is RunCancelled {
  return value instanceof RunCancelled;
}

/** How a cancelled run ends. */
export function cancelledOutcome(
  kind: CancelKind,
  message: string,
  forced = false,
): { status: RunStatus; failure: RunFailure } {
  const status: RunStatus =
    kind === "timeout" ? "timed_out" : kind === "aborted" ? "aborted" : "failed";
  return { status, failure: { kind, message, ...(forced ? { forced } : {}) } };
}
