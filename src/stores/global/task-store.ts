import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkText,
  encodeRecord,
  optionalErrorText,
  optionalTime,
} from "../checks.js";
import { TaskDeliveryStore } from "./task-delivery-store.js";
import {
  fromRow,
  MAX_TASK_RECORD_BYTES,
  type NewTaskRun,
  newTaskValues,
  TASK_RUN_COLUMNS,
  type TaskRecord,
  type TaskRun,
  type TaskRunRow,
} from "./task-rows.js";
import {
  checkStatus,
  checkTransition,
  isTerminalTask,
  TASK_STATUSES,
  TASK_TRANSITIONS,
  type TaskStatus,
} from "./task-states.js";

export {
  MAX_TASK_RECORD_BYTES,
  type NewTaskRun,
  TASK_RUN_COLUMNS,
  type TaskRecord,
  type TaskRun,
} from "./task-rows.js";

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

/**
 * Task runs (`task_runs`): work a runtime does on someone's behalf, moving through
 * queued → running → an end state, with only the transitions in `TASK_TRANSITIONS` allowed.
 * `delivery` holds how each task's outcome reaches its requester; it is deleted with the task.
 */
export class TaskStore {
  readonly delivery: TaskDeliveryStore;
  private readonly clock: Clock;
  private readonly insert: SqlStatement<TaskRunRow>;
  private readonly selectOne: SqlStatement<TaskRunRow>;
  private readonly moveTo: SqlStatement<TaskRunRow>;
  private readonly deleteOne: SqlStatement;
  private readonly byStatus: SqlStatement<TaskRunRow>;
  private readonly byFlow: SqlStatement<TaskRunRow>;
  private readonly byRequester: SqlStatement<TaskRunRow>;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "TaskStore").clock ?? Date.now;
    this.delivery = new TaskDeliveryStore(db, this.clock);
    const columns = TASK_RUN_COLUMNS.join(", ");
    this.insert = db.prepare(
      `INSERT INTO task_runs (${columns}) VALUES (${TASK_RUN_COLUMNS.map((c) => `@${c}`).join(", ")})
       ON CONFLICT DO NOTHING RETURNING *`,
    );
    this.selectOne = db.prepare("SELECT * FROM task_runs WHERE task_id = ?");
    this.moveTo = db.prepare(
      `UPDATE task_runs SET status = @to, updated_at = @now, record_json = @record,
         error = coalesce(@error, error),
         started_at = iif(@to = 'running', coalesce(started_at, @at), started_at),
         ended_at = iif(@terminal, @at, ended_at)
       WHERE task_id = @taskId RETURNING *`,
    );
    this.deleteOne = db.prepare("DELETE FROM task_runs WHERE task_id = ?");
    const page = "ORDER BY created_at, task_id LIMIT ?";
    this.byStatus = db.prepare(`SELECT * FROM task_runs WHERE status = ? ${page}`);
    this.byFlow = db.prepare(`SELECT * FROM task_runs WHERE flow_id = ? ${page}`);
    this.byRequester = db.prepare(
      `SELECT * FROM task_runs WHERE requester_session_key = ? ${page}`,
    );
  }

  /** Creates a task (E_CONFLICT if its id exists). */
  create(task: NewTaskRun): TaskRun {
    const row = this.insert.get(newTaskValues(task, this.clock()));
    if (!row) {
      throw new StateError("E_CONFLICT", `task ${task.taskId} already exists`, {
        details: { taskId: task.taskId },
      });
    }
    return fromRow(row);
  }

  get(taskId: string): TaskRun | undefined {
    const row = this.selectOne.get(checkText("task id", taskId, 256));
    return row ? fromRow(row) : undefined;
  }

  /**
   * Moves a task to `to` if `TASK_TRANSITIONS` allows it from its current status (else E_CONFLICT,
   * naming both), stamping started_at / ended_at. Read, check and write are one transaction.
   */
  transition(taskId: string, to: TaskStatus, options: TaskTransitionOptions = {}): TaskRun {
    const id = checkText("task id", taskId, 256);
    const target = checkStatus("task status", to, TASK_STATUSES);
    const { expected, at, error, record } = checkOptions(
      options,
      TRANSITION_KEYS,
      "TaskStore.transition",
    );
    return this.db.tx(() => {
      const current = this.require(id);
      if (expected !== undefined && current.status !== expected) {
        throw new StateError(
          "E_CONFLICT",
          `task ${id} is ${current.status}, expected ${expected}`,
          {
            details: { taskId: id, status: current.status, expected },
          },
        );
      }
      checkTransition(`task ${id}`, TASK_TRANSITIONS, current.status, target);
      const now = this.clock();
      const row = this.moveTo.get({
        taskId: id,
        to: target,
        now,
        at: optionalTime("at", at) ?? now,
        terminal: isTerminalTask(target) ? 1 : 0,
        error: optionalErrorText(error),
        record: encodeRecord(
          `task ${id} record`,
          { ...current.record, ...record },
          MAX_TASK_RECORD_BYTES,
        ),
      });
      return fromRow(row as TaskRunRow);
    });
  }

  /** Deletes a task and its delivery state. */
  delete(taskId: string): boolean {
    return this.deleteOne.run(checkText("task id", taskId, 256)).changes > 0;
  }

  /** Tasks in one status, oldest first. */
  listByStatus(status: TaskStatus, options: { limit?: number } = {}): TaskRun[] {
    const { limit } = checkOptions(options, ["limit"], "TaskStore.listByStatus");
    const checked = checkStatus("task status", status, TASK_STATUSES);
    return this.byStatus.all(checked, checkLimit(limit)).map(fromRow);
  }

  listByFlow(flowId: string, options: { limit?: number } = {}): TaskRun[] {
    const { limit } = checkOptions(options, ["limit"], "TaskStore.listByFlow");
    return this.byFlow.all(checkText("flow id", flowId, 256), checkLimit(limit)).map(fromRow);
  }

  listByRequester(sessionKey: string, options: { limit?: number } = {}): TaskRun[] {
    const { limit } = checkOptions(options, ["limit"], "TaskStore.listByRequester");
    return this.byRequester
      .all(checkText("session key", sessionKey), checkLimit(limit))
      .map(fromRow);
  }

  private require(taskId: string): TaskRun {
    const row = this.selectOne.get(taskId);
    if (!row) throw new StateError("E_NOT_FOUND", `no task ${taskId}`, { details: { taskId } });
    return fromRow(row);
  }
}
