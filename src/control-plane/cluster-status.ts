import type { ControlPlane, LeaseStatus, QueueCounts } from "./control-plane.js";

/** A host as the control plane knows it: by the live leases it holds (a host holding none is not seen). */
export interface HostStatus {
  host: string;
  agents: number;
  /** The soonest of its leases' deadlines (Unix ms): past it, that agent can move. */
  nextExpiry: number;
  /** The largest replica lag its agents reported; null when none reported yet. */
  worstLagMs: number | null;
}

export interface QueueStatus extends QueueCounts {
  queue: string;
}

/** What `agentstate cluster status` shows: hosts, every agent's lease and replica lag, queues. */
export interface ClusterStatus {
  backend: ControlPlane["backend"];
  /** When it was read (Unix ms, this machine's clock). */
  at: number;
  hosts: HostStatus[];
  agents: LeaseStatus[];
  queues: QueueStatus[];
}

export async function readClusterStatus(
  cp: ControlPlane,
  now: () => number = Date.now,
): Promise<ClusterStatus> {
  const agents = await cp.leases.list();
  const queues: QueueStatus[] = [];
  for (const queue of await cp.queue.queues()) {
    queues.push({ queue, ...(await cp.queue.counts(queue)) });
  }
  return { backend: cp.backend, at: now(), hosts: hostsOf(agents), agents, queues };
}

function hostsOf(agents: readonly LeaseStatus[]): HostStatus[] {
  const hosts = new Map<string, HostStatus>();
  for (const lease of agents) {
    if (!lease.live || lease.host === null) continue;
    const seen = hosts.get(lease.host);
    const lag = lease.replicaLagMs;
    if (seen === undefined) {
      hosts.set(lease.host, {
        host: lease.host,
        agents: 1,
        nextExpiry: lease.expiresAt,
        worstLagMs: lag,
      });
      continue;
    }
    seen.agents++;
    seen.nextExpiry = Math.min(seen.nextExpiry, lease.expiresAt);
    if (lag !== null) seen.worstLagMs = Math.max(seen.worstLagMs ?? 0, lag);
  }
  return [...hosts.values()].sort((a, b) => a.host.localeCompare(b.host));
}
