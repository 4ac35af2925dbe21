import { columnsOf } from "../../db/columns.js";
import {
  checkOptions,
  checkStored,
  checkText,
  decodeJson,
  encodeJson,
  optionalTime,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import { checkStatus, TASK_DELIVERY_STATUSES, type TaskDeliveryStatus } from "./task-states.js";

export interface TaskDeliveryRow {
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

export function deliveryFromRow(row: TaskDeliveryRow): TaskDelivery {
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

/** The upsert's parameters for `set`, every argument checked before anything is read. */
export function deliveryParams(taskId: string, update: TaskDeliveryUpdate, now: number) {
  const id = checkText("task id", taskId, 256);
  const { status, requesterOrigin, lastNotifiedAt } = checkOptions(
    update,
    ["status", "requesterOrigin", "lastNotifiedAt"],
    "TaskStore.delivery.set",
  );
  return {
    taskId: id,
    status: checkStatus("task delivery status", status, TASK_DELIVERY_STATUSES),
    keepOrigin: requesterOrigin === undefined ? 1 : 0,
    origin:
      requesterOrigin === undefined
        ? null
        : encodeJson(`task ${id} requester origin`, requesterOrigin, 64 * 1024),
    notifiedAt: optionalTime("lastNotifiedAt", lastNotifiedAt),
    now,
  };
}
