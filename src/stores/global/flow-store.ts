import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
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

interface FlowRunRow {
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

function fromRow(row: FlowRunRow): FlowRun {
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

/**
 * Multi-step task flows (`flow_runs`). Every change bumps `revision`, so a controller can write
 * with `expectedRevision` and learn (E_CONFLICT) that someone else moved the flow first.
 */
export class FlowStore {
  private readonly clock: Clock;
  private readonly insert: SqlStatement<FlowRunRow>;
  private readonly selectOne: SqlStatement<FlowRunRow>;
  private readonly write: SqlStatement<FlowRunRow>;
  private readonly deleteOne: SqlStatement;
  private readonly byStatus: SqlStatement<FlowRunRow>;
  private readonly byOwner: SqlStatement<FlowRunRow>;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "FlowStore").clock ?? Date.now;
    this.insert = db.prepare(
      `INSERT INTO flow_runs (${FLOW_RUN_COLUMNS.join(", ")})
       VALUES (@flowId, @ownerKey, @status, @goal, @currentStep, 1, @record, @createdAt, @now, @endedAt)
       ON CONFLICT DO NOTHING RETURNING *`,
    );
    this.selectOne = db.prepare("SELECT * FROM flow_runs WHERE flow_id = ?");
    this.write = db.prepare(
      `UPDATE flow_runs SET status = @status, current_step = @currentStep, record_json = @record,
         revision = revision + 1, updated_at = @now, ended_at = iif(@terminal, @now, ended_at)
       WHERE flow_id = @flowId RETURNING *`,
    );
    this.deleteOne = db.prepare("DELETE FROM flow_runs WHERE flow_id = ?");
    this.byStatus = db.prepare(
      "SELECT * FROM flow_runs WHERE status = ? ORDER BY created_at, flow_id LIMIT ?",
    );
    this.byOwner = db.prepare(
      "SELECT * FROM flow_runs WHERE owner_key = ? ORDER BY created_at, flow_id LIMIT ?",
    );
  }

  /** Creates a flow (E_CONFLICT if its id exists). */
  create(flow: NewFlowRun): FlowRun {
    const f = checkOptions(flow, NEW_KEYS, "FlowStore.create");
    const id = f.flowId === undefined ? randomUUID() : checkText("flow id", f.flowId, 256);
    const status = checkStatus("flow status", f.status ?? "queued", FLOW_STATUSES);
    const now = this.clock();
    const row = this.insert.get({
      flowId: id,
      ownerKey: checkText("flow ownerKey", f.ownerKey),
      status,
      goal: checkText("flow goal", f.goal, 64 * 1024),
      currentStep: optionalText("flow currentStep", f.currentStep),
      record: encodeRecord(`flow ${id} record`, f.record ?? {}, MAX_TASK_RECORD_BYTES),
      createdAt: optionalTime("createdAt", f.createdAt) ?? now,
      now,
      endedAt: isTerminalFlow(status) ? now : null,
    });
    if (!row)
      throw new StateError("E_CONFLICT", `flow ${id} already exists`, { details: { flowId: id } });
    return fromRow(row);
  }

  get(flowId: string): FlowRun | undefined {
    const row = this.selectOne.get(checkText("flow id", flowId, 256));
    return row ? fromRow(row) : undefined;
  }

  /** Moves a flow to `to` if `FLOW_TRANSITIONS` allows it (else E_CONFLICT), in one transaction. */
  transition(flowId: string, to: FlowStatus, update: FlowUpdate = {}): FlowRun {
    const target = checkStatus("flow status", to, FLOW_STATUSES);
    return this.change(flowId, update, "FlowStore.transition", (current) => {
      checkTransition(`flow ${current.flowId}`, FLOW_TRANSITIONS, current.status, target);
      return target;
    });
  }

  /** Changes a flow's step or record without changing its status; bumps the revision. */
  update(flowId: string, update: FlowUpdate): FlowRun {
    return this.change(flowId, update, "FlowStore.update", (current) => current.status);
  }

  delete(flowId: string): boolean {
    return this.deleteOne.run(checkText("flow id", flowId, 256)).changes > 0;
  }

  /** Flows in one status, oldest first. */
  listByStatus(status: FlowStatus, options: { limit?: number } = {}): FlowRun[] {
    const { limit } = checkOptions(options, ["limit"], "FlowStore.listByStatus");
    return this.byStatus
      .all(checkStatus("flow status", status, FLOW_STATUSES), checkLimit(limit))
      .map(fromRow);
  }

  listByOwner(ownerKey: string, options: { limit?: number } = {}): FlowRun[] {
    const { limit } = checkOptions(options, ["limit"], "FlowStore.listByOwner");
    return this.byOwner.all(checkText("flow ownerKey", ownerKey), checkLimit(limit)).map(fromRow);
  }

  /** Read, check (revision, then the caller's status rule), write: one transaction. */
  private change(
    flowId: string,
    update: FlowUpdate,
    where: string,
    nextStatus: (current: FlowRun) => FlowStatus,
  ): FlowRun {
    const id = checkText("flow id", flowId, 256);
    const { expectedRevision, currentStep, record } = checkOptions(update, UPDATE_KEYS, where);
    return this.db.tx(() => {
      const current = this.require(id, expectedRevision);
      const status = nextStatus(current);
      const step = currentStep === undefined ? current.currentStep : currentStep;
      const merged = { ...current.record, ...record };
      const written = this.write.get({
        flowId: id,
        status,
        currentStep: optionalText("flow currentStep", step),
        record: encodeRecord(`flow ${id} record`, merged, MAX_TASK_RECORD_BYTES),
        now: this.clock(),
        terminal: isTerminalFlow(status) && status !== current.status ? 1 : 0,
      });
      return fromRow(written as FlowRunRow);
    });
  }

  private require(id: string, expectedRevision: number | undefined): FlowRun {
    const row = this.selectOne.get(id);
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
}
