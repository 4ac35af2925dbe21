import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
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
} from "../stores/global/flow-rows.js";
import { FLOW_SQL } from "../stores/global/flow-sql.js";
import type { FlowStatus } from "../stores/global/task-states.js";
import type { ControlPlaneFlows } from "./control-plane.js";
import { pgStatements, query, transaction } from "./pg-statements.js";

// `FLOW_SQL` as it is, plus the row lock a change holds from its read to its write: of hosts moving
// one flow at once, each reads the one before's commit, so its revision and transition checks see
// what it is about to overwrite.
const SQL = pgStatements("flows", {
  ...FLOW_SQL,
  lock: `${FLOW_SQL.select} FOR UPDATE`,
  delete: `${FLOW_SQL.delete} RETURNING 1 AS gone`,
});

/** Task flows on PostgreSQL: `FlowStore`'s statements, checks and `FLOW_TRANSITIONS`. */
export class PgFlows implements ControlPlaneFlows {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async create(flow: NewFlowRun): Promise<FlowRun> {
    const params = createParams(flow, this.clock);
    const [row] = await query<FlowRunRow>(this.pool, SQL.insert, params);
    if (!row) throw flowExists(params.flowId);
    return fromRow(row);
  }

  async get(flowId: string): Promise<FlowRun | undefined> {
    const [row] = await query<FlowRunRow>(this.pool, SQL.select, { flowId: checkFlowId(flowId) });
    return row ? fromRow(row) : undefined;
  }

  transition(flowId: string, to: FlowStatus, update: FlowUpdate = {}): Promise<FlowRun> {
    return this.change(flowId, update, "FlowStore.transition", transitionTo(to));
  }

  update(flowId: string, update: FlowUpdate): Promise<FlowRun> {
    return this.change(flowId, update, "FlowStore.update", SAME_STATUS);
  }

  async delete(flowId: string): Promise<boolean> {
    const rows = await query(this.pool, SQL.delete, { flowId: checkFlowId(flowId) });
    return rows.length > 0;
  }

  async listByStatus(status: FlowStatus, options: { limit?: number } = {}): Promise<FlowRun[]> {
    const params = byStatusParams(status, options);
    return (await query<FlowRunRow>(this.pool, SQL.byStatus, params)).map(fromRow);
  }

  async listByOwner(ownerKey: string, options: { limit?: number } = {}): Promise<FlowRun[]> {
    const params = byOwnerParams(ownerKey, options);
    return (await query<FlowRunRow>(this.pool, SQL.byOwner, params)).map(fromRow);
  }

  private async change(flowId: string, update: FlowUpdate, where: string, next: NextStatus) {
    const checked = checkChange(flowId, update, where);
    return transaction(this.pool, async (client) => {
      const [row] = await query<FlowRunRow>(client, SQL.lock, { flowId: checked.id });
      const values = changedValues(checked.id, row, checked.update, next, this.clock);
      const [written] = await query<FlowRunRow>(client, SQL.write, values);
      return fromRow(written as FlowRunRow);
    });
  }
}
