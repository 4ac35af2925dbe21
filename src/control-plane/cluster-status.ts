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

/** An agent's lease, and its database's size as the control plane's registry last recorded it. */
export interface AgentStatus extends LeaseStatus {
  /** Bytes, as of its host's last registration or release; null when it was never registered. */
  sizeBytes: number | null;
}

/** What `agentstate cluster status` shows: hosts, every agent's lease, replica lag and size, queues. */
export interface ClusterStatus {
  backend: ControlPlane["backend"];
  /** When it was read (Unix ms, this machine's clock). */
  at: number;
  hosts: HostStatus[];
  agents: AgentStatus[];
  queues: QueueStatus[];
}

export async function readClusterStatus(
  cp: ControlPlane,
  now: () => number = Date.now,
): Promise<ClusterStatus> {
  const leases = await cp.leases.list();
  const sizes = await registeredSizes(cp);
  const agents = leases.map((lease) => ({ ...lease, sizeBytes: sizes.get(lease.agentId) ?? null }));
  const queues: QueueStatus[] = [];
  for (const queue of await cp.queue.queues()) {
    queues.push({ queue, ...(await cp.queue.counts(queue)) });
  }
  return { backend: cp.backend, at: now(), hosts: hostsOf(agents), agents, queues };
}

const PAGE = 10_000;

async function registeredSizes(cp: ControlPlane): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  let page = await cp.agents.list({ limit: PAGE });
  for (;;) {
    for (const agent of page) sizes.set(agent.agentId, agent.sizeBytes);
    const last = page.at(-1);
    if (page.length < PAGE || last === undefined) return sizes;
    page = await cp.agents.list({ after: last.agentId, limit: PAGE });
  }
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
