import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import { checkInteger, checkText } from "../checks.js";

export interface AgentLeaseRow {
  agent_id: string;
  owner_host: string | null;
  epoch: number;
  lease_expires_at: number;
  acquired_at: number;
  updated_at: number;
  replica_lag_ms: number | null;
  replica_checked_at: number | null;
}

export const AGENT_LEASE_COLUMNS = columnsOf<AgentLeaseRow>()(
  "agent_id",
  "owner_host",
  "epoch",
  "lease_expires_at",
  "acquired_at",
  "updated_at",
  "replica_lag_ms",
  "replica_checked_at",
);

/** A host's hold on an agent: its writes for the agent are accepted while `epoch` is current. */
export interface AgentLease {
  agentId: string;
  host: string;
  /** Grows by one each time a host wins the agent; the fence on writes made for it. */
  epoch: number;
  /** After this, another host may win the agent (and the epoch moves on). */
  expiresAt: number;
}

/** What a write made for an agent carries: the epoch its host won the agent under. */
export interface LeaseFence {
  agentId: string;
  epoch: number;
}

/** One agent's row as an operator sees it (`agentstate cluster status`). */
export interface LeaseStatus {
  agentId: string;
  /** The host holding it; null once released (the row stays, for the epoch). */
  host: string | null;
  epoch: number;
  expiresAt: number;
  /** Held now: a host, and a deadline still ahead. */
  live: boolean;
  acquiredAt: number;
  /** How long the replica had been behind the last commit when the host last looked (ms). */
  replicaLagMs: number | null;
  replicaCheckedAt: number | null;
}

/** What a host reports of one agent it owns, after a renewal. */
export interface ReplicaReport {
  agentId: string;
  epoch: number;
  lagMs: number;
}

export function leaseStatusFromRow(row: AgentLeaseRow, now: number): LeaseStatus {
  return {
    agentId: row.agent_id,
    host: row.owner_host,
    epoch: row.epoch,
    expiresAt: row.lease_expires_at,
    live: row.owner_host !== null && row.lease_expires_at > now,
    acquiredAt: row.acquired_at,
    replicaLagMs: row.replica_lag_ms,
    replicaCheckedAt: row.replica_checked_at,
  };
}

/** The reports as one JSON parameter (one statement for all of a host's agents). */
export function replicaReportsJson(reports: readonly ReplicaReport[]): string {
  return JSON.stringify(
    reports.map((r) => ({
      agent_id: checkText("agent id", r.agentId, 256),
      epoch: checkEpoch(r.epoch),
      lag_ms: checkInteger("lagMs", r.lagMs, 0, Number.MAX_SAFE_INTEGER),
    })),
  );
}

export function leaseFromRow(row: AgentLeaseRow): AgentLease {
  return {
    agentId: row.agent_id,
    host: row.owner_host as string,
    epoch: row.epoch,
    expiresAt: row.lease_expires_at,
  };
}

/**
 * Statements shared by both control-plane backends: the same text runs on SQLite and, with its
 * `@name`s turned into `$n`s, on PostgreSQL (both have upserts with `excluded` and RETURNING).
 * A host wins an agent nobody holds, whose lease expired, or that it holds itself; only winning it
 * from someone else (or after a release or an expiry) bumps the epoch, so re-acquiring one's own
 * live lease is a renewal.
 */
export const LEASE_SQL = {
  acquire: `INSERT INTO agent_leases (agent_id, owner_host, epoch, lease_expires_at, acquired_at, updated_at)
    VALUES (@agentId, @host, 1, @expiresAt, @now, @now)
    ON CONFLICT (agent_id) DO UPDATE SET
      epoch = CASE WHEN agent_leases.owner_host = excluded.owner_host
          AND agent_leases.lease_expires_at > excluded.acquired_at
        THEN agent_leases.epoch ELSE agent_leases.epoch + 1 END,
      acquired_at = CASE WHEN agent_leases.owner_host = excluded.owner_host
          AND agent_leases.lease_expires_at > excluded.acquired_at
        THEN agent_leases.acquired_at ELSE excluded.acquired_at END,
      owner_host = excluded.owner_host,
      lease_expires_at = excluded.lease_expires_at,
      updated_at = excluded.updated_at
    WHERE agent_leases.owner_host IS NULL OR agent_leases.lease_expires_at <= excluded.acquired_at
      OR agent_leases.owner_host = excluded.owner_host
    RETURNING *`,
  // Every lease the host still holds, lapsed or not: a lapsed one nobody took kept its epoch, so
  // nothing was written for the agent by anyone else meanwhile.
  renew: `UPDATE agent_leases SET lease_expires_at = @expiresAt, updated_at = @now
    WHERE owner_host = @host RETURNING *`,
  release: `UPDATE agent_leases SET owner_host = NULL, lease_expires_at = @now, updated_at = @now
    WHERE agent_id = @agentId AND owner_host = @host AND epoch = @epoch RETURNING *`,
  select: "SELECT * FROM agent_leases WHERE agent_id = @agentId",
  list: "SELECT * FROM agent_leases ORDER BY agent_id",
} as const;

/**
 * A host's replica reports, applied only to the leases it still holds under the reported epoch
 * (a report racing a takeover changes nothing). The JSON differs by backend, hence two texts.
 */
export const REPORT_SQL = {
  sqlite: `UPDATE agent_leases SET replica_lag_ms = json_extract(r.value, '$.lag_ms'),
      replica_checked_at = @now
    FROM json_each(@reports) AS r
    WHERE agent_leases.agent_id = json_extract(r.value, '$.agent_id')
      AND agent_leases.epoch = json_extract(r.value, '$.epoch')
      AND agent_leases.owner_host = @host`,
  postgres: `UPDATE agent_leases SET replica_lag_ms = r.lag_ms, replica_checked_at = @now
    FROM json_to_recordset(@reports::json) AS r(agent_id text, epoch bigint, lag_ms bigint)
    WHERE agent_leases.agent_id = r.agent_id AND agent_leases.epoch = r.epoch
      AND agent_leases.owner_host = @host
    RETURNING agent_leases.agent_id`,
} as const;

export function checkLeaseArgs(agentId: unknown, host: unknown) {
  return { agentId: checkText("agent id", agentId, 256), host: checkText("host", host, 256) };
}

export function checkTtl(ttlMs: unknown, now: number): number {
  return now + checkInteger("ttlMs", ttlMs, 1, 7 * 86_400_000);
}

export function checkEpoch(epoch: unknown): number {
  return checkInteger("epoch", epoch, 1, Number.MAX_SAFE_INTEGER);
}

/** The row as it is now, if its holder is live at `now`. */
export function liveLease(row: AgentLeaseRow | undefined, now: number): AgentLease | undefined {
  return row && row.owner_host !== null && row.lease_expires_at > now
    ? leaseFromRow(row)
    : undefined;
}

/** Why `acquire` won nothing: another host holds a live lease. */
export function notOwnerError(agentId: string, host: string, row: AgentLeaseRow | undefined) {
  const owner = row?.owner_host ?? null;
  return new StateError(
    "E_NOT_OWNER",
    `agent ${agentId} is held by ${owner ?? "another host"} until ${new Date(row?.lease_expires_at ?? 0).toISOString()}, not by ${host}`,
    {
      details: {
        agentId,
        host,
        owner,
        epoch: row?.epoch ?? null,
        expiresAt: row?.lease_expires_at ?? null,
      },
    },
  );
}

/** A write made for an agent under an epoch that has moved on (or a lease never won). */
export function leaseLostError(fence: LeaseFence, row: AgentLeaseRow | undefined): StateError {
  const now = row ? `epoch ${row.epoch}, held by ${row.owner_host ?? "nobody"}` : "no lease at all";
  return new StateError(
    "E_LEASE_LOST",
    `agent ${fence.agentId}: write made under epoch ${fence.epoch} refused; the agent is at ${now}`,
    {
      details: {
        agentId: fence.agentId,
        epoch: fence.epoch,
        currentEpoch: row?.epoch ?? null,
        owner: row?.owner_host ?? null,
      },
    },
  );
}

export function checkFence(fence: unknown): LeaseFence {
  if (typeof fence !== "object" || fence === null) throw new TypeError("Expected a lease fence");
  const { agentId, epoch } = fence as LeaseFence;
  return { agentId: checkText("agent id", agentId, 256), epoch: checkEpoch(epoch) };
}
