import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import { TaskDeliveryStore } from "./task-delivery-store.js";
import {
  fromRow,
  type NewTaskRun,
  newTaskValues,
  type TaskRun,
  type TaskRunRow,
} from "./task-rows.js";
import { TASK_SQL } from "./task-sql.js";
import type { TaskStatus } from "./task-states.js";
import {
  checkTaskId,
  listParams,
  noTaskRun,
  type TaskListBy,
  type TaskTransitionOptions,
  taskExists,
  transitionParams,
  transitionRequest,
} from "./task-transitions.js";

export {
  MAX_TASK_RECORD_BYTES,
  type NewTaskRun,
  TASK_RUN_COLUMNS,
  type TaskRecord,
  type TaskRun,
} from "./task-rows.js";
export type { TaskTransitionOptions } from "./task-transitions.js";

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
  private readonly lists: Record<TaskListBy, SqlStatement<TaskRunRow>>;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "TaskStore").clock ?? Date.now;
    this.delivery = new TaskDeliveryStore(db, this.clock);
    this.insert = db.prepare(TASK_SQL.insert);
    this.selectOne = db.prepare(TASK_SQL.select);
    this.moveTo = db.prepare(TASK_SQL.moveTo);
    this.deleteOne = db.prepare(TASK_SQL.delete);
    this.lists = {
      status: db.prepare(TASK_SQL.byStatus),
      flow: db.prepare(TASK_SQL.byFlow),
      requester: db.prepare(TASK_SQL.byRequester),
    };
  }

  /** Creates a task (E_CONFLICT if its id exists). */
  create(task: NewTaskRun): TaskRun {
    const values = newTaskValues(task, this.clock());
    const row = this.insert.get(values);
    if (!row) throw taskExists(values.task_id as string);
    return fromRow(row);
  }

  get(taskId: string): TaskRun | undefined {
    const row = this.selectOne.get({ taskId: checkTaskId(taskId) });
    return row ? fromRow(row) : undefined;
  }

  /**
   * Moves a task to `to` if `TASK_TRANSITIONS` allows it from its current status (else E_CONFLICT,
   * naming both), stamping started_at / ended_at. Read, check and write are one transaction.
   */
  transition(taskId: string, to: TaskStatus, options: TaskTransitionOptions = {}): TaskRun {
    const request = transitionRequest(taskId, to, options);
    return this.db.tx(() => {
      const row = this.selectOne.get({ taskId: request.taskId });
      if (!row) throw noTaskRun(request.taskId);
      const moved = this.moveTo.get(transitionParams(fromRow(row), request, this.clock()));
      return fromRow(moved as TaskRunRow);
    });
  }

  /** Deletes a task and its delivery state. */
  delete(taskId: string): boolean {
    return this.deleteOne.run({ taskId: checkTaskId(taskId) }).changes > 0;
  }

  /** Tasks in one status, oldest first. */
  listByStatus(status: TaskStatus, options: { limit?: number } = {}): TaskRun[] {
    return this.list("status", status, options);
  }

  listByFlow(flowId: string, options: { limit?: number } = {}): TaskRun[] {
    return this.list("flow", flowId, options);
  }

  listByRequester(sessionKey: string, options: { limit?: number } = {}): TaskRun[] {
    return this.list("requester", sessionKey, options);
  }

  private list(by: TaskListBy, value: unknown, options: { limit?: number }): TaskRun[] {
    return this.lists[by].all(listParams(by, value, options)).map(fromRow);
  }
}
