import { StateError } from "../../db/errors.js";
import {
  checkLimit,
  checkOptions,
  checkText,
  encodeRecord,
  optionalErrorText,
  optionalTime,
} from "../checks.js";
import { MAX_TASK_RECORD_BYTES, type TaskRecord, type TaskRun } from "./task-rows.js";
import {
  checkStatus,
  checkTransition,
  isTerminalTask,
  TASK_STATUSES,
  TASK_TRANSITIONS,
  type TaskStatus,
} from "./task-states.js";

export interface TaskTransitionOptions {
  /** Only if the task is in this status now, else E_CONFLICT (compare-and-swap). */
  expected?: TaskStatus;
  /** When it happened (default now): becomes started_at (running) or ended_at (terminal). */
  at?: number;
  error?: string;
  /** Fields shallow-merged into the task's record. */
  record?: TaskRecord;
}

const TRANSITION_KEYS = ["expected", "at", "error", "record"] as const;

/** A transition's arguments, checked before the task is read (as both backends check them). */
export interface TransitionRequest {
  taskId: string;
  to: TaskStatus;
  options: TaskTransitionOptions;
}

export function transitionRequest(
  taskId: string,
  to: TaskStatus,
  options: TaskTransitionOptions,
): TransitionRequest {
  return {
    taskId: checkTaskId(taskId),
    to: checkStatus("task status", to, TASK_STATUSES),
    options: checkOptions(options, TRANSITION_KEYS, "TaskStore.transition"),
  };
}

/**
 * The update moving `current` as `request` asks, refused as a conflict when the task is not in
 * the `expected` status or `TASK_TRANSITIONS` forbids the move. The caller holds the row (a
 * SQLite write transaction, a PostgreSQL row lock) from the read of `current` to the write.
 */
export function transitionParams(current: TaskRun, request: TransitionRequest, now: number) {
  const { taskId: id, to, options } = request;
  const { expected } = options;
  if (expected !== undefined && current.status !== expected) {
    throw new StateError("E_CONFLICT", `task ${id} is ${current.status}, expected ${expected}`, {
      details: { taskId: id, status: current.status, expected },
    });
  }
  checkTransition(`task ${id}`, TASK_TRANSITIONS, current.status, to);
  return {
    taskId: id,
    to,
    now,
    at: optionalTime("at", options.at) ?? now,
    terminal: isTerminalTask(to) ? 1 : 0,
    error: optionalErrorText(options.error),
    record: encodeRecord(
      `task ${id} record`,
      { ...current.record, ...options.record },
      MAX_TASK_RECORD_BYTES,
    ),
  };
}

export function checkTaskId(taskId: unknown): string {
  return checkText("task id", taskId, 256);
}

export function taskExists(taskId: string): StateError {
  return new StateError("E_CONFLICT", `task ${taskId} already exists`, { details: { taskId } });
}

export function noTaskRun(taskId: string): StateError {
  return new StateError("E_NOT_FOUND", `no task ${taskId}`, { details: { taskId } });
}

/** What each list selects by, and how its key is checked. */
const LISTS = {
  status: ["TaskStore.listByStatus", (v: unknown) => checkStatus("task status", v, TASK_STATUSES)],
  flow: ["TaskStore.listByFlow", (v: unknown) => checkText("flow id", v, 256)],
  requester: ["TaskStore.listByRequester", (v: unknown) => checkText("session key", v)],
} as const;

export type TaskListBy = keyof typeof LISTS;

/** A list's parameters, checked in TaskStore's order: options, key, limit. */
export function listParams(by: TaskListBy, value: unknown, options: { limit?: number }) {
  const [what, check] = LISTS[by];
  const { limit } = checkOptions(options, ["limit"], what);
  const key = check(value);
  return { value: key, limit: checkLimit(limit) };
}
