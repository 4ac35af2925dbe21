import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import type { Clock } from "../checks.js";
import {
  type AgentLease,
  type AgentLeaseRow,
  checkEpoch,
  checkFence,
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
} from "./agent-lease-rows.js";

export type { AgentLease, LeaseFence } from "./agent-lease-rows.js";

type Statements = { readonly [K in keyof typeof LEASE_SQL]: SqlStatement<AgentLeaseRow> };

/**
 * Agent leases (`agent_leases`) in the global SQLite database: which host owns each agent, under
 * which epoch. The synchronous half of the SQLite control plane; see `LEASE_SQL` for the rules.
 */
export class AgentLeaseStore {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly sql: Statements;
  private readonly reportSql: SqlStatement<never>;

  constructor(db: Database, clock: Clock = Date.now) {
    this.db = db;
    this.clock = clock;
    const prepared: Record<string, SqlStatement<AgentLeaseRow>> = {};
    for (const [name, text] of Object.entries(LEASE_SQL)) prepared[name] = db.prepare(text);
    this.sql = prepared as Statements;
    this.reportSql = db.prepare(REPORT_SQL.sqlite);
  }

  /** Wins `agentId` for `host` for `ttlMs`; E_NOT_OWNER (naming the owner) while another holds it. */
  acquire(agentId: string, host: string, ttlMs: number): AgentLease {
    const args = checkLeaseArgs(agentId, host);
    const now = this.clock();
    const row = this.sql.acquire.get({ ...args, now, expiresAt: checkTtl(ttlMs, now) });
    if (!row) throw notOwnerError(args.agentId, args.host, this.sql.select.get(args));
    return leaseFromRow(row);
  }

  /** Extends every lease `host` holds to `ttlMs` from now, in one statement; returns them. */
  renew(host: string, ttlMs: number): AgentLease[] {
    const { host: checked } = checkLeaseArgs("-", host);
    const now = this.clock();
    return this.sql.renew
      .all({ host: checked, now, expiresAt: checkTtl(ttlMs, now) })
      .map(leaseFromRow);
  }

  /** Gives the agent up; false when `host` no longer held it under `epoch`. */
  release(agentId: string, host: string, epoch: number): boolean {
    const args = { ...checkLeaseArgs(agentId, host), epoch: checkEpoch(epoch) };
    return this.sql.release.get({ ...args, now: this.clock() }) !== undefined;
  }

  /** Records how far behind each agent's replica is; returns how many of `host`'s leases took it. */
  report(host: string, reports: readonly ReplicaReport[]): number {
    const { host: checked } = checkLeaseArgs("-", host);
    if (reports.length === 0) return 0;
    const json = replicaReportsJson(reports);
    return this.reportSql.run({ host: checked, now: this.clock(), reports: json }).changes;
  }

  /** Every agent's row, held, lapsed or released, by agent id. */
  list(): LeaseStatus[] {
    const now = this.clock();
    return this.sql.list.all({}).map((row) => leaseStatusFromRow(row, now));
  }

  /** The live lease on the agent, or undefined when nobody holds it. */
  owner(agentId: string): AgentLease | undefined {
    const { agentId: checked } = checkLeaseArgs(agentId, "-");
    return liveLease(this.sql.select.get({ agentId: checked }), this.clock());
  }

  /**
   * Runs `write` in one transaction with the check that `fence.epoch` is still the agent's epoch:
   * E_LEASE_LOST (and nothing written) when another host won the agent since.
   */
  fenced<T>(fence: LeaseFence, write: () => T): T {
    const checked = checkFence(fence);
    return this.db.tx(() => {
      const row = this.sql.select.get({ agentId: checked.agentId });
      if (row?.epoch !== checked.epoch) throw leaseLostError(checked, row);
      return write();
    });
  }
}
