import type { StateHome } from "../home.js";
import type { Clock } from "../stores/checks.js";
import { AgentRegistryStore } from "../stores/global/agent-registry-store.js";
import type { ControlPlaneAgents } from "./control-plane-agents.js";

/** The home's `AgentRegistryStore` as it is: a registration is one transaction of two upserts. */
export function sqliteAgents(home: StateHome, clock: Clock): ControlPlaneAgents {
  const store = new AgentRegistryStore(home.db, { clock });
  return Object.freeze({
    register: async (agentId, registration) => store.register(agentId, registration),
    get: async (agentId) => store.get(agentId),
    list: async (options) => store.list(options),
    refresh: async (agentId, refresh) => store.refresh(agentId, refresh),
    remove: async (agentId) => store.remove(agentId),
  } satisfies ControlPlaneAgents);
}
