import type { Pool } from "pg";
import type { StateError } from "../db/errors.js";
import type { Clock } from "../stores/checks.js";
import {
  type AgentLease,
  type AgentLeaseRow,
  checkEpoch,
  checkLeaseArgs,
  checkTtl,
  LEASE_SQL,
  type LeaseFence,
  type LeaseStatus,
  leaseFromRow,
  leaseLostError,
  leaseStatusFromRow,
  liveLease,
  notOwnerError,
  REPORT_SQL,
  type ReplicaReport,
  replicaReportsJson,
} from "../stores/global/agent-lease-rows.js";
import type { ControlPlaneLeases } from "./control-plane.js";
import { pgStatements, query } from "./pg-statements.js";

const SQL = pgStatements("lease", { ...LEASE_SQL, report: REPORT_SQL.postgres });

/** Agent leases on PostgreSQL: the same statements as on SQLite (`LEASE_SQL`). */
export class PgLeases implements ControlPlaneLeases {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async acquire(agentId: string, host: string, ttlMs: number): Promise<AgentLease> {
    const args = checkLeaseArgs(agentId, host);
    const now = this.clock();
    const [row] = await query<AgentLeaseRow>(this.pool, SQL.acquire, {
      ...args,
      now,
      expiresAt: checkTtl(ttlMs, now),
    });
    if (row) return leaseFromRow(row);
    throw notOwnerError(args.agentId, args.host, await this.row(args.agentId));
  }

  async renew(host: string, ttlMs: number): Promise<AgentLease[]> {
    const { host: checked } = checkLeaseArgs("-", host);
    const now = this.clock();
    const rows = await query<AgentLeaseRow>(this.pool, SQL.renew, {
      host: checked,
      now,
      expiresAt: checkTtl(ttlMs, now),
    });
    return rows.map(leaseFromRow);
  }

  async release(agentId: string, host: string, epoch: number): Promise<boolean> {
    const args = { ...checkLeaseArgs(agentId, host), epoch: checkEpoch(epoch) };
    const rows = await query<AgentLeaseRow>(this.pool, SQL.release, { ...args, now: this.clock() });
    return rows.length > 0;
  }

  async report(host: string, reports: readonly ReplicaReport[]): Promise<number> {
    const { host: checked } = checkLeaseArgs("-", host);
    if (reports.length === 0) return 0;
    const json = replicaReportsJson(reports);
    const rows = await query(this.pool, SQL.report, {
      host: checked,
      now: this.clock(),
      reports: json,
    });
    return rows.length;
  }

  async list(): Promise<LeaseStatus[]> {
    const now = this.clock();
    const rows = await query<AgentLeaseRow>(this.pool, SQL.list, {});
    return rows.map((row) => leaseStatusFromRow(row, now));
  }

  async owner(agentId: string): Promise<AgentLease | undefined> {
    const { agentId: checked } = checkLeaseArgs(agentId, "-");
    return liveLease(await this.row(checked), this.clock());
  }

  /** E_LEASE_LOST when `fence` is no longer the agent's epoch, else undefined. */
  async fenceLost(fence: LeaseFence): Promise<StateError | undefined> {
    const row = await this.row(fence.agentId);
    return row?.epoch === fence.epoch ? undefined : leaseLostError(fence, row);
  }

  private async row(agentId: string): Promise<AgentLeaseRow | undefined> {
    const [row] = await query<AgentLeaseRow>(this.pool, SQL.select, { agentId });
    return row;
  }
}
