import { StateError } from "../../db/errors.js";

/**
 * The lifecycles of tasks and flows, as the gateway's task registry defines them, and which
 * transitions each allows. Terminal states allow none: a late report about a finished task is a
 * conflict to surface, not a state to overwrite.
 */
export const TASK_STATUSES = [
  "queued",
  "running",
  "succeeded",
  "failed",
  "timed_out",
  "cancelled",
  "lost",
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const FLOW_STATUSES = [
  "queued",
  "running",
  "waiting",
  "blocked",
  "succeeded",
  "failed",
  "cancelled",
  "lost",
] as const;
export type FlowStatus = (typeof FLOW_STATUSES)[number];

export const TASK_DELIVERY_STATUSES = [
  "pending",
  "delivered",
  "session_queued",
  "failed",
  "parent_missing",
  "not_applicable",
] as const;
export type TaskDeliveryStatus = (typeof TASK_DELIVERY_STATUSES)[number];

const TASK_ENDS = ["succeeded", "failed", "timed_out", "cancelled", "lost"] as const;

/** From each status, the statuses a task may move to. */
export const TASK_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  // A queued task can be abandoned before it starts (cancelled, lost after a restart, failed to
  // launch, timed out waiting for a slot).
  queued: ["running", ...TASK_ENDS],
  running: TASK_ENDS,
  succeeded: [],
  failed: [],
  timed_out: [],
  cancelled: [],
  lost: [],
};

const FLOW_ENDS = ["succeeded", "failed", "cancelled", "lost"] as const;

/** From each status, the statuses a flow may move to. */
export const FLOW_TRANSITIONS: Readonly<Record<FlowStatus, readonly FlowStatus[]>> = {
  queued: ["running", "failed", "cancelled", "lost"],
  running: ["waiting", "blocked", ...FLOW_ENDS],
  // A waiting or blocked flow resumes by running again.
  waiting: ["running", "blocked", ...FLOW_ENDS],
  blocked: ["running", "waiting", ...FLOW_ENDS],
  succeeded: [],
  failed: [],
  cancelled: [],
  lost: [],
};

export function isTerminalTask(status: TaskStatus): boolean {
  return TASK_TRANSITIONS[status].length === 0;
}

export function isTerminalFlow(status: FlowStatus): boolean {
  return FLOW_TRANSITIONS[status].length === 0;
}

export function checkStatus<T extends string>(
  what: string,
  value: unknown,
  values: readonly T[],
): T {
  if (!(values as readonly unknown[]).includes(value)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} must be one of ${values.join(", ")}, got ${JSON.stringify(value)}`,
    );
  }
  return value as T;
}

/** E_CONFLICT unless `from → to` is allowed; names the row and both states. */
export function checkTransition<T extends string>(
  what: string,
  transitions: Readonly<Record<T, readonly T[]>>,
  from: T,
  to: T,
): void {
  if (!transitions[from].includes(to)) {
    const allowed =
      transitions[from].length === 0 ? "none (it has ended)" : transitions[from].join(", ");
    throw new StateError(
      "E_CONFLICT",
      `${what} cannot go from ${from} to ${to}; allowed: ${allowed}`,
      {
        details: { from, to },
      },
    );
  }
}
