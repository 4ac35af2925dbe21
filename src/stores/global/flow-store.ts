import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import {
  byOwnerParams,
  byStatusParams,
  changedValues,
  checkChange,
  checkFlowId,
  createParams,
  type FlowRun,
  type FlowRunRow,
  type FlowUpdate,
  flowExists,
  fromRow,
  type NewFlowRun,
  type NextStatus,
  SAME_STATUS,
  transitionTo,
} from "./flow-rows.js";
import { FLOW_SQL } from "./flow-sql.js";
import type { FlowStatus } from "./task-states.js";

export {
  FLOW_RUN_COLUMNS,
  type FlowRun,
  type FlowUpdate,
  type NewFlowRun,
} from "./flow-rows.js";

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
    this.insert = db.prepare(FLOW_SQL.insert);
    this.selectOne = db.prepare(FLOW_SQL.select);
    this.write = db.prepare(FLOW_SQL.write);
    this.deleteOne = db.prepare(FLOW_SQL.delete);
    this.byStatus = db.prepare(FLOW_SQL.byStatus);
    this.byOwner = db.prepare(FLOW_SQL.byOwner);
  }

  /** Creates a flow (E_CONFLICT if its id exists). */
  create(flow: NewFlowRun): FlowRun {
    const params = createParams(flow, this.clock);
    const row = this.insert.get(params);
    if (!row) throw flowExists(params.flowId);
    return fromRow(row);
  }

  get(flowId: string): FlowRun | undefined {
    const row = this.selectOne.get({ flowId: checkFlowId(flowId) });
    return row ? fromRow(row) : undefined;
  }

  /** Moves a flow to `to` if `FLOW_TRANSITIONS` allows it (else E_CONFLICT), in one transaction. */
  transition(flowId: string, to: FlowStatus, update: FlowUpdate = {}): FlowRun {
    return this.change(flowId, update, "FlowStore.transition", transitionTo(to));
  }

  /** Changes a flow's step or record without changing its status; bumps the revision. */
  update(flowId: string, update: FlowUpdate): FlowRun {
    return this.change(flowId, update, "FlowStore.update", SAME_STATUS);
  }

  delete(flowId: string): boolean {
    return this.deleteOne.run({ flowId: checkFlowId(flowId) }).changes > 0;
  }

  /** Flows in one status, oldest first. */
  listByStatus(status: FlowStatus, options: { limit?: number } = {}): FlowRun[] {
    return this.byStatus.all(byStatusParams(status, options)).map(fromRow);
  }

  listByOwner(ownerKey: string, options: { limit?: number } = {}): FlowRun[] {
    return this.byOwner.all(byOwnerParams(ownerKey, options)).map(fromRow);
  }

  /** Read, check (revision, then the caller's status rule), write: one transaction. */
  private change(flowId: string, update: FlowUpdate, where: string, next: NextStatus): FlowRun {
    const checked = checkChange(flowId, update, where);
    return this.db.tx(() => {
      const row = this.selectOne.get({ flowId: checked.id });
      const values = changedValues(checked.id, row, checked.update, next, this.clock);
      return fromRow(this.write.get(values) as FlowRunRow);
    });
  }
}
