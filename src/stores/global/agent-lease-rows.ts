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
}

export const AGENT_LEASE_COLUMNS = columnsOf<AgentLeaseRow>()(
  "agent_id",
  "owner_host",
  "epoch",
  "lease_expires_at",
  "acquired_at",
  "updated_at",
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
