import type { LeaseFence } from "../stores/global/agent-lease-rows.js";

/**
 * The fence of a PostgreSQL control-plane write made for an agent: a CTE that yields one row, and
 * holds the agent's lease row FOR SHARE until commit, while the agent's epoch is still
 * `@fenceEpoch`. The write takes its values `FROM fence`, so it writes nothing once another host
 * won the agent; and a host winning the agent meanwhile waits for the write's commit, so no write
 * slips in between a check and the takeover.
 */
export const FENCE_CTE = `fence AS (SELECT 1 FROM agent_leases
  WHERE agent_id = @fenceAgentId AND epoch = @fenceEpoch::bigint FOR SHARE)`;

export function fenceParams(fence: LeaseFence) {
  return { fenceAgentId: fence.agentId, fenceEpoch: fence.epoch };
}
