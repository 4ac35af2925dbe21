import type { Pool, PoolClient } from "pg";
import type { Clock } from "../stores/checks.js";
import {
  deliveryFromRow,
  deliveryParams,
  type TaskDelivery,
  type TaskDeliveryRow,
  type TaskDeliveryUpdate,
} from "../stores/global/task-delivery-rows.js";
import { pendingLimit } from "../stores/global/task-delivery-store.js";
import {
  fromRow,
  type NewTaskRun,
  newTaskValues,
  type TaskRun,
  type TaskRunRow,
} from "../stores/global/task-rows.js";
import { TASK_DELIVERY_SQL, TASK_SQL } from "../stores/global/task-sql.js";
import type { TaskStatus } from "../stores/global/task-states.js";
import {
  checkTaskId,
  listParams,
  noTaskRun,
  type TaskListBy,
  type TaskTransitionOptions,
  taskExists,
  transitionParams,
  transitionRequest,
} from "../stores/global/task-transitions.js";
import type { ControlPlaneTaskDelivery, ControlPlaneTasks } from "./control-plane.js";
import { pgStatements, query, transaction } from "./pg-statements.js";

// `TASK_SQL` as it is, plus the row locks PostgreSQL needs: a transition holds its task from the
// read to the write, so of two hosts moving one queued task to running, the second reads the
// first's commit and gets E_CONFLICT; a delivery state holds its task against a delete.
const SQL = pgStatements("tasks", {
  ...TASK_SQL,
  lock: `${TASK_SQL.select} FOR UPDATE`,
  delete: `${TASK_SQL.delete} RETURNING task_id`,
});
const DELIVERY_SQL = pgStatements("task_delivery", {
  ...TASK_DELIVERY_SQL,
  taskExists: `${TASK_DELIVERY_SQL.taskExists} FOR KEY SHARE`,
});
const LISTS: Record<TaskListBy, (typeof SQL)[keyof typeof SQL]> = {
  status: SQL.byStatus,
  flow: SQL.byFlow,
  requester: SQL.byRequester,
};

/** Task runs on PostgreSQL: `TaskStore`'s statements and rules, transitions under a row lock. */
export class PgTasks implements ControlPlaneTasks {
  readonly delivery: ControlPlaneTaskDelivery;

  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {
    this.delivery = Object.freeze(new PgTaskDelivery(pool, clock));
  }

  async create(task: NewTaskRun): Promise<TaskRun> {
    const values = newTaskValues(task, this.clock());
    const [row] = await query<TaskRunRow>(this.pool, SQL.insert, values);
    if (!row) throw taskExists(values.task_id as string);
    return fromRow(row);
  }

  async get(taskId: string): Promise<TaskRun | undefined> {
    const [row] = await query<TaskRunRow>(this.pool, SQL.select, { taskId: checkTaskId(taskId) });
    return row ? fromRow(row) : undefined;
  }

  async transition(
    taskId: string,
    to: TaskStatus,
    options: TaskTransitionOptions = {},
  ): Promise<TaskRun> {
    const request = transitionRequest(taskId, to, options);
    return transaction(this.pool, async (client) => {
      const current = fromRow(await locked(client, request.taskId));
      const params = transitionParams(current, request, this.clock());
      const [row] = await query<TaskRunRow>(client, SQL.moveTo, params);
      return fromRow(row as TaskRunRow);
    });
  }

  async delete(taskId: string): Promise<boolean> {
    const rows = await query(this.pool, SQL.delete, { taskId: checkTaskId(taskId) });
    return rows.length > 0;
  }

  listByStatus(status: TaskStatus, options: { limit?: number } = {}): Promise<TaskRun[]> {
    return this.list("status", status, options);
  }

  listByFlow(flowId: string, options: { limit?: number } = {}): Promise<TaskRun[]> {
    return this.list("flow", flowId, options);
  }

  listByRequester(sessionKey: string, options: { limit?: number } = {}): Promise<TaskRun[]> {
    return this.list("requester", sessionKey, options);
  }

  private async list(by: TaskListBy, value: unknown, options: { limit?: number }) {
    const rows = await query<TaskRunRow>(this.pool, LISTS[by], listParams(by, value, options));
    return rows.map(fromRow);
  }
}

async function locked(client: PoolClient, taskId: string): Promise<TaskRunRow> {
  const [row] = await query<TaskRunRow>(client, SQL.lock, { taskId });
  if (!row) throw noTaskRun(taskId);
  return row;
}

/** `TaskDeliveryStore` on PostgreSQL. */
class PgTaskDelivery implements ControlPlaneTaskDelivery {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async set(taskId: string, update: TaskDeliveryUpdate): Promise<TaskDelivery> {
    const params = deliveryParams(taskId, update, this.clock());
    return transaction(this.pool, async (client) => {
      const found = await query(client, DELIVERY_SQL.taskExists, { taskId: params.taskId });
      if (found.length === 0) throw noTaskRun(params.taskId);
      const [row] = await query<TaskDeliveryRow>(client, DELIVERY_SQL.upsert, params);
      return deliveryFromRow(row as TaskDeliveryRow);
    });
  }

  async get(taskId: string): Promise<TaskDelivery | undefined> {
    const id = checkTaskId(taskId);
    const [row] = await query<TaskDeliveryRow>(this.pool, DELIVERY_SQL.select, { taskId: id });
    return row ? deliveryFromRow(row) : undefined;
  }

  async listPending(options: { limit?: number } = {}): Promise<TaskDelivery[]> {
    const rows = await query<TaskDeliveryRow>(this.pool, DELIVERY_SQL.pending, {
      limit: pendingLimit(options),
    });
    return rows.map(deliveryFromRow);
  }
}
