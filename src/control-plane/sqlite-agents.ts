import type { StateHome } from "../home.js";
import type { Clock } from "../stores/checks.js";
import { AgentRegistryStore } from "../stores/global/agent-registry-store.js";
import { asyncFacade } from "./async-facade.js";
import type { ControlPlaneAgents } from "./control-plane-agents.js";

/** The home's `AgentRegistryStore` as it is: a registration is one transaction of two upserts. */
export function sqliteAgents(home: StateHome, clock: Clock): ControlPlaneAgents {
  const store = new AgentRegistryStore(home.db, { clock });
  return asyncFacade(store, [
    "register",
    "get",
    "list",
    "refresh",
    "remove",
  ]) satisfies ControlPlaneAgents;
}
