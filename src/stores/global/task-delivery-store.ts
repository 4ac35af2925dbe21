import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkStored,
  checkText,
  decodeJson,
  encodeJson,
  optionalTime,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import { checkStatus, TASK_DELIVERY_STATUSES, type TaskDeliveryStatus } from "./task-states.js";

interface TaskDeliveryRow {
  task_id: string;
  status: string;
  requester_origin_json: string | null;
  last_notified_at: number | null;
  updated_at: number;
}

export const TASK_DELIVERY_COLUMNS = columnsOf<TaskDeliveryRow>()(
  "task_id",
  "status",
  "requester_origin_json",
  "last_notified_at",
  "updated_at",
);

export interface TaskDelivery {
  taskId: string;
  status: TaskDeliveryStatus;
  /** Where the requester is (channel, to, accountId …), as the gateway recorded it. */
  requesterOrigin: JsonValue | null;
  lastNotifiedAt: number | null;
  updatedAt: number;
}

export interface TaskDeliveryUpdate {
  status: TaskDeliveryStatus;
  /** Left as it was when omitted. */
  requesterOrigin?: JsonValue;
  /** Left as it was when omitted. */
  lastNotifiedAt?: number;
}

function fromRow(row: TaskDeliveryRow): TaskDelivery {
  const what = `task ${row.task_id} delivery`;
  return {
    taskId: row.task_id,
    status: checkStored(`${what} status`, row.status, TASK_DELIVERY_STATUSES),
    requesterOrigin:
      row.requester_origin_json === null
        ? null
        : decodeJson(`${what} origin`, row.requester_origin_json),
    lastNotifiedAt: row.last_notified_at,
    updatedAt: row.updated_at,
  };
}

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
    this.upsert = db.prepare(
      `INSERT INTO task_delivery_state (${TASK_DELIVERY_COLUMNS.join(", ")})
       VALUES (@taskId, @status, @origin, @notifiedAt, @now)
       ON CONFLICT DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at,
         requester_origin_json = iif(@keepOrigin, requester_origin_json, excluded.requester_origin_json),
         last_notified_at = coalesce(excluded.last_notified_at, last_notified_at)
       RETURNING *`,
    );
    this.taskExists = db.prepare("SELECT 1 FROM task_runs WHERE task_id = ?");
    this.selectOne = db.prepare("SELECT * FROM task_delivery_state WHERE task_id = ?");
    this.pending = db.prepare(
      "SELECT * FROM task_delivery_state WHERE status = 'pending' ORDER BY updated_at LIMIT ?",
    );
  }

  /** Sets a task's delivery state, keeping the origin and notify time unless given. */
  set(taskId: string, update: TaskDeliveryUpdate): TaskDelivery {
    const id = checkText("task id", taskId, 256);
    const { status, requesterOrigin, lastNotifiedAt } = checkOptions(
      update,
      ["status", "requesterOrigin", "lastNotifiedAt"],
      "TaskStore.delivery.set",
    );
    const params = {
      taskId: id,
      status: checkStatus("task delivery status", status, TASK_DELIVERY_STATUSES),
      keepOrigin: requesterOrigin === undefined ? 1 : 0,
      origin:
        requesterOrigin === undefined
          ? null
          : encodeJson(`task ${id} requester origin`, requesterOrigin, 64 * 1024),
      notifiedAt: optionalTime("lastNotifiedAt", lastNotifiedAt),
      now: this.clock(),
    };
    return this.db.tx(() => {
      // Checked first so the caller gets E_NOT_FOUND naming the task, not a foreign-key error.
      if (!this.taskExists.get(id)) {
        throw new StateError("E_NOT_FOUND", `no task ${id}`, { details: { taskId: id } });
      }
      return fromRow(this.upsert.get(params) as TaskDeliveryRow);
    });
  }

  get(taskId: string): TaskDelivery | undefined {
    const row = this.selectOne.get(checkText("task id", taskId, 256));
    return row ? fromRow(row) : undefined;
  }

  /** Deliveries still to make, oldest first. */
  listPending(options: { limit?: number } = {}): TaskDelivery[] {
    const { limit } = checkOptions(options, ["limit"], "TaskStore.delivery.listPending");
    return this.pending.all(checkLimit(limit)).map(fromRow);
  }
}
