import type {
  AgentListOptions,
  AgentRefresh,
  AgentRegistration,
  RegisteredAgent,
} from "../stores/global/agent-registry-rows.js";

/**
 * The agent registry (`agents`, `agent_databases`), with the semantics of the home's
 * `AgentRegistryStore` on either backend. Every write is one statement on PostgreSQL, so hosts
 * sharing the control plane see one list of the cluster's agents; which host owns each one stays
 * in `cp.leases`.
 */
export interface ControlPlaneAgents {
  /**
   * Records the agent's database (path, schema version, size; last seen now), creating its entry
   * on first registration; a later one, from any host, keeps its `createdAt`.
   */
  register(agentId: string, registration: AgentRegistration): Promise<RegisteredAgent>;
  get(agentId: string): Promise<RegisteredAgent | undefined>;
  /** Registered agents by id (bytewise), at most `limit` (default 100), `after` the last seen. */
  list(options?: AgentListOptions): Promise<RegisteredAgent[]>;
  /** Records the database's size (and quick_check) as of now; E_NOT_FOUND for an unknown agent. */
  refresh(agentId: string, refresh: AgentRefresh): Promise<RegisteredAgent>;
  /** Forgets the agent (its database and lease stay); false when it was not registered. */
  remove(agentId: string): Promise<boolean>;
}
