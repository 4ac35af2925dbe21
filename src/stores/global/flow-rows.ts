import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkInteger,
  checkLimit,
  checkOptions,
  checkStored,
  checkText,
  decodeJson,
  encodeRecord,
  optionalText,
  optionalTime,
} from "../checks.js";
import { MAX_TASK_RECORD_BYTES, type TaskRecord } from "./task-rows.js";
import {
  checkStatus,
  checkTransition,
  FLOW_STATUSES,
  FLOW_TRANSITIONS,
  type FlowStatus,
  isTerminalFlow,
} from "./task-states.js";

export interface FlowRunRow {
  flow_id: string;
  owner_key: string;
  status: string;
  goal: string;
  current_step: string | null;
  revision: number;
  record_json: string;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
}

export const FLOW_RUN_COLUMNS = columnsOf<FlowRunRow>()(
  "flow_id",
  "owner_key",
  "status",
  "goal",
  "current_step",
  "revision",
  "record_json",
  "created_at",
  "updated_at",
  "ended_at",
);

export interface NewFlowRun {
  /** Default: a random UUID. */
  flowId?: string;
  /** Who controls the flow (a session key, a plugin …). */
  ownerKey: string;
  goal: string;
  /** Default `queued`; an import may create a flow in any state. */
  status?: FlowStatus;
  currentStep?: string;
  createdAt?: number;
  /** Everything else (flow state, wait conditions, notify policy …), kept verbatim. */
  record?: TaskRecord;
}

export interface FlowRun {
  flowId: string;
  ownerKey: string;
  status: FlowStatus;
  goal: string;
  currentStep: string | null;
  /** 1 when created, +1 on every change: the compare-and-swap token of `transition`/`update`. */
  revision: number;
  record: TaskRecord;
  createdAt: number;
  updatedAt: number;
  endedAt: number | null;
}

export interface FlowUpdate {
  /** Only if the flow is at this revision now, else E_CONFLICT. */
  expectedRevision?: number;
  currentStep?: string | null;
  /** Fields shallow-merged into the flow's record. */
  record?: TaskRecord;
}

const NEW_KEYS = ["flowId", "ownerKey", "goal", "status", "currentStep", "createdAt", "record"];
const UPDATE_KEYS = ["expectedRevision", "currentStep", "record"];

export function fromRow(row: FlowRunRow): FlowRun {
  return {
    flowId: row.flow_id,
    ownerKey: row.owner_key,
    status: checkStored(`flow ${row.flow_id} status`, row.status, FLOW_STATUSES),
    goal: row.goal,
    currentStep: row.current_step,
    revision: row.revision,
    record: decodeJson<TaskRecord>(`flow ${row.flow_id} record`, row.record_json),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    endedAt: row.ended_at,
  };
}

export function checkFlowId(flowId: string): string {
  return checkText("flow id", flowId, 256);
}

/** The parameters of `FLOW_SQL.insert`. */
export function createParams(flow: NewFlowRun, clock: Clock) {
  const f = checkOptions(flow, NEW_KEYS, "FlowStore.create");
  const id = f.flowId === undefined ? randomUUID() : checkFlowId(f.flowId);
  const status = checkStatus("flow status", f.status ?? "queued", FLOW_STATUSES);
  const now = clock();
  return {
    flowId: id,
    ownerKey: checkText("flow ownerKey", f.ownerKey),
    status,
    goal: checkText("flow goal", f.goal, 64 * 1024),
    currentStep: optionalText("flow currentStep", f.currentStep),
    record: encodeRecord(`flow ${id} record`, f.record ?? {}, MAX_TASK_RECORD_BYTES),
    createdAt: optionalTime("createdAt", f.createdAt) ?? now,
    now,
    endedAt: isTerminalFlow(status) ? now : null,
  };
}

export function flowExists(id: string): StateError {
  return new StateError("E_CONFLICT", `flow ${id} already exists`, { details: { flowId: id } });
}

/** How a change picks the next status from the current flow (and refuses, if it must). */
export type NextStatus = (current: FlowRun) => FlowStatus;

/** `transition`'s rule: `to`, if `FLOW_TRANSITIONS` allows it from the current status. */
export function transitionTo(to: FlowStatus): NextStatus {
  const target = checkStatus("flow status", to, FLOW_STATUSES);
  return (current) => {
    checkTransition(`flow ${current.flowId}`, FLOW_TRANSITIONS, current.status, target);
    return target;
  };
}

export const SAME_STATUS: NextStatus = (current) => current.status;

/** A change's checked arguments, before the flow is read. */
export function checkChange(flowId: string, update: FlowUpdate, where: string) {
  return { id: checkFlowId(flowId), update: checkOptions(update, UPDATE_KEYS, where) };
}

/**
 * The parameters of `FLOW_SQL.write`, from the flow as read under the write lock (undefined: none):
 * its revision checked, then the caller's status rule, then the merged step and record.
 */
export function changedValues(
  id: string,
  row: FlowRunRow | undefined,
  update: FlowUpdate,
  nextStatus: NextStatus,
  clock: Clock,
) {
  const current = requireFlow(id, row, update.expectedRevision);
  const status = nextStatus(current);
  const step = update.currentStep === undefined ? current.currentStep : update.currentStep;
  const merged = { ...current.record, ...update.record };
  return {
    flowId: id,
    status,
    currentStep: optionalText("flow currentStep", step),
    record: encodeRecord(`flow ${id} record`, merged, MAX_TASK_RECORD_BYTES),
    now: clock(),
    terminal: isTerminalFlow(status) && status !== current.status ? 1 : 0,
  };
}

function requireFlow(id: string, row: FlowRunRow | undefined, expectedRevision?: number) {
  if (!row) throw new StateError("E_NOT_FOUND", `no flow ${id}`, { details: { flowId: id } });
  const current = fromRow(row);
  if (expectedRevision === undefined) return current;
  const expected = checkInteger("expectedRevision", expectedRevision, 0, Number.MAX_SAFE_INTEGER);
  if (expected !== current.revision) {
    throw new StateError(
      "E_CONFLICT",
      `flow ${id} is at revision ${current.revision}, expected ${expected}`,
      { details: { flowId: id, revision: current.revision, expectedRevision: expected } },
    );
  }
  return current;
}

export function byStatusParams(status: FlowStatus, options: { limit?: number }) {
  const { limit } = checkOptions(options, ["limit"], "FlowStore.listByStatus");
  return { status: checkStatus("flow status", status, FLOW_STATUSES), limit: checkLimit(limit) };
}

export function byOwnerParams(ownerKey: string, options: { limit?: number }) {
  const { limit } = checkOptions(options, ["limit"], "FlowStore.listByOwner");
  return { ownerKey: checkText("flow ownerKey", ownerKey), limit: checkLimit(limit) };
}
