import { Hono, type MiddlewareHandler } from "hono";
import type { ClusterHome } from "../cluster/cluster-home.js";
import { StateError } from "../db/errors.js";
import { agentId, params, z } from "./validation.js";

const agentParams = z.object({ agentId });

/**
 * Whether a read may win the agent: the agent exists somewhere in the cluster (this home holds
 * it, or another host holds its lease, or has replicated it). A read of an agent nobody has is a
 * 404, as on a single host, and wins nothing.
 */
async function knownInCluster(home: ClusterHome, id: string): Promise<boolean> {
  if (home.hasAgent(id) || (await home.hasReplica(id))) return true;
  return (await home.controlPlane.leases.owner(id)) !== undefined;
}

/**
 * On a cluster host, every route of one agent first wins (or renews) its lease, so the routes
 * below serve it from this host's stores: E_NOT_OWNER (409, naming the owner) while another
 * host holds it. A write to an agent new to the cluster creates it here.
 */
export function ownAgentFirst(home: ClusterHome): MiddlewareHandler {
  return async (c, next) => {
    const { agentId: id } = params(c, agentParams);
    const read = c.req.method === "GET" || c.req.method === "HEAD";
    if (read && !home.serves(id) && !(await knownInCluster(home, id))) {
      throw new StateError("E_NOT_FOUND", `no agent ${id} in this cluster`, {
        details: { agentId: id },
      });
    }
    // A held lease is renewed in the background: only an agent not served here asks the server.
    if (!home.serves(id)) await home.openAgent(id);
    await next();
  };
}

/**
 * `POST /agents/:agentId/durable`: answers once the off-host replica holds every commit the
 * agent made before the call, so a client knows what a host kill cannot lose.
 */
export function durableRoutes(home: ClusterHome): Hono {
  return new Hono().post("/agents/:agentId/durable", async (c) => {
    const { agentId: id } = params(c, agentParams);
    const agent = await home.openAgent(id);
    await agent.durable();
    return c.json({ agentId: id, host: home.cluster.host, epoch: agent.lease.epoch });
  });
}
