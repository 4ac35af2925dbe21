import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkLimit, checkOptions, checkText } from "../checks.js";
import {
  deliveryFromRow,
  deliveryParams,
  type TaskDelivery,
  type TaskDeliveryRow,
  type TaskDeliveryUpdate,
} from "./task-delivery-rows.js";
import { TASK_DELIVERY_SQL } from "./task-sql.js";
import { noTaskRun } from "./task-transitions.js";

export {
  TASK_DELIVERY_COLUMNS,
  type TaskDelivery,
  type TaskDeliveryUpdate,
} from "./task-delivery-rows.js";

/**
 * How each task's outcome reaches whoever asked for it (`task_delivery_state`). A row belongs to
 * its task: setting one for a missing task is E_NOT_FOUND, and deleting the task deletes it.
 */
export class TaskDeliveryStore {
  private readonly upsert: SqlStatement<TaskDeliveryRow>;
  private readonly taskExists: SqlStatement;
  private readonly selectOne: SqlStatement<TaskDeliveryRow>;
  private readonly pending: SqlStatement<TaskDeliveryRow>;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    this.upsert = db.prepare(TASK_DELIVERY_SQL.upsert);
    this.taskExists = db.prepare(TASK_DELIVERY_SQL.taskExists);
    this.selectOne = db.prepare(TASK_DELIVERY_SQL.select);
    this.pending = db.prepare(TASK_DELIVERY_SQL.pending);
  }

  /** Sets a task's delivery state, keeping the origin and notify time unless given. */
  set(taskId: string, update: TaskDeliveryUpdate): TaskDelivery {
    const params = deliveryParams(taskId, update, this.clock());
    return this.db.tx(() => {
      // Checked first so the caller gets E_NOT_FOUND naming the task, not a foreign-key error.
      if (!this.taskExists.get({ taskId: params.taskId })) throw noTaskRun(params.taskId);
      return deliveryFromRow(this.upsert.get(params) as TaskDeliveryRow);
    });
  }

  get(taskId: string): TaskDelivery | undefined {
    const row = this.selectOne.get({ taskId: checkText("task id", taskId, 256) });
    return row ? deliveryFromRow(row) : undefined;
  }

  /** Deliveries still to make, oldest first (ties by task id). */
  listPending(options: { limit?: number } = {}): TaskDelivery[] {
    return this.pending.all({ limit: pendingLimit(options) }).map(deliveryFromRow);
  }
}

export function pendingLimit(options: { limit?: number }): number {
  const { limit } = checkOptions(options, ["limit"], "TaskStore.delivery.listPending");
  return checkLimit(limit);
}
