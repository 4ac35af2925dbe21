import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import {
  checkOptions,
  checkStored,
  checkText,
  decodeJson,
  encodeRecord,
  optionalErrorText,
  optionalText,
  optionalTime,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import { checkStatus, TASK_STATUSES, type TaskStatus } from "./task-states.js";

export const MAX_TASK_RECORD_BYTES = 256 * 1024;

export interface TaskRunRow {
  task_id: string;
  runtime: string;
  status: string;
  agent_id: string | null;
  requester_session_key: string | null;
  child_session_key: string | null;
  flow_id: string | null;
  run_id: string | null;
  label: string | null;
  error: string | null;
  record_json: string;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
  updated_at: number;
}

export const TASK_RUN_COLUMNS = columnsOf<TaskRunRow>()(
  "task_id",
  "runtime",
  "status",
  "agent_id",
  "requester_session_key",
  "child_session_key",
  "flow_id",
  "run_id",
  "label",
  "error",
  "record_json",
  "created_at",
  "started_at",
  "ended_at",
  "updated_at",
);

export type TaskRecord = { [key: string]: JsonValue };

export interface NewTaskRun {
  /** Default: a random UUID. */
  taskId?: string;
  /** Which runtime owns the run: `subagent`, `acp`, `cli`, `cron` … */
  runtime: string;
  /** Default `queued`; an import may create a task in any state. */
  status?: TaskStatus;
  agentId?: string;
  requesterSessionKey?: string;
  childSessionKey?: string;
  flowId?: string;
  runId?: string;
  label?: string;
  error?: string;
  createdAt?: number;
  startedAt?: number;
  endedAt?: number;
  /** Everything else about the task (its prompt, notify policy, summaries …), kept verbatim. */
  record?: TaskRecord;
}

export interface TaskRun {
  taskId: string;
  runtime: string;
  status: TaskStatus;
  agentId: string | null;
  requesterSessionKey: string | null;
  childSessionKey: string | null;
  flowId: string | null;
  runId: string | null;
  label: string | null;
  error: string | null;
  record: TaskRecord;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  updatedAt: number;
}

const NEW_KEYS = [
  "taskId",
  "runtime",
  "status",
  "agentId",
  "requesterSessionKey",
  "childSessionKey",
  "flowId",
  "runId",
  "label",
  "error",
  "createdAt",
  "startedAt",
  "endedAt",
  "record",
] as const;

export function fromRow(row: TaskRunRow): TaskRun {
  return {
    taskId: row.task_id,
    runtime: row.runtime,
    status: checkStored(`task ${row.task_id} status`, row.status, TASK_STATUSES),
    agentId: row.agent_id,
    requesterSessionKey: row.requester_session_key,
    childSessionKey: row.child_session_key,
    flowId: row.flow_id,
    runId: row.run_id,
    label: row.label,
    error: row.error,
    record: decodeJson<TaskRecord>(`task ${row.task_id} record`, row.record_json),
    createdAt: row.created_at,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    updatedAt: row.updated_at,
  };
}

export function newTaskValues(
  task: NewTaskRun,
  now: number,
): Record<string, string | number | null> {
  const t = checkOptions(task, NEW_KEYS, "TaskStore.create");
  const id = t.taskId === undefined ? randomUUID() : checkText("task id", t.taskId, 256);
  const key = (what: string, value: unknown) => optionalText(`task ${id} ${what}`, value);
  return {
    task_id: id,
    runtime: checkText("task runtime", t.runtime, 64),
    status: checkStatus("task status", t.status ?? "queued", TASK_STATUSES),
    agent_id: key("agentId", t.agentId),
    requester_session_key: key("requesterSessionKey", t.requesterSessionKey),
    child_session_key: key("childSessionKey", t.childSessionKey),
    flow_id: key("flowId", t.flowId),
    run_id: key("runId", t.runId),
    label: key("label", t.label),
    error: optionalErrorText(t.error),
    record_json: encodeRecord(`task ${id} record`, t.record ?? {}, MAX_TASK_RECORD_BYTES),
    created_at: optionalTime("createdAt", t.createdAt) ?? now,
    started_at: optionalTime("startedAt", t.startedAt),
    ended_at: optionalTime("endedAt", t.endedAt),
    updated_at: now,
  };
}
