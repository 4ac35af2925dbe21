import type { Pool } from "pg";
import { validateAgentId } from "../ids.js";
import type { Clock } from "../stores/checks.js";
import {
  type AgentListOptions,
  type AgentRefresh,
  type AgentRegistration,
  agentNotRegistered,
  fromRow,
  listParams,
  type RegisteredAgent,
  type RegisteredAgentRow,
  refreshParams,
  registerParams,
} from "../stores/global/agent-registry-rows.js";
import { AGENT_REGISTRY_PG_SQL } from "../stores/global/agent-registry-sql.js";
import type { ControlPlaneAgents } from "./control-plane-agents.js";
import { pgStatements, query } from "./pg-statements.js";

// Every write is one statement: a registration upserts both rows at once, so a host that dies
// halfway leaves nothing half-registered.
const SQL = pgStatements("agents", AGENT_REGISTRY_PG_SQL);

/** The agent registry on PostgreSQL: `AgentRegistryStore`'s statements and checks. */
export class PgAgents implements ControlPlaneAgents {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async register(agentId: string, registration: AgentRegistration): Promise<RegisteredAgent> {
    const params = registerParams(agentId, registration, this.clock());
    const [row] = await query<RegisteredAgentRow>(this.pool, SQL.register, params);
    return fromRow(row as RegisteredAgentRow);
  }

  async get(agentId: string): Promise<RegisteredAgent | undefined> {
    const params = { agentId: validateAgentId(agentId) };
    const [row] = await query<RegisteredAgentRow>(this.pool, SQL.select, params);
    return row ? fromRow(row) : undefined;
  }

  async list(options: AgentListOptions = {}): Promise<RegisteredAgent[]> {
    return (await query<RegisteredAgentRow>(this.pool, SQL.page, listParams(options))).map(fromRow);
  }

  async refresh(agentId: string, refresh: AgentRefresh): Promise<RegisteredAgent> {
    const params = refreshParams(agentId, refresh, this.clock());
    const [row] = await query<RegisteredAgentRow>(this.pool, SQL.refresh, params);
    if (row === undefined) throw agentNotRegistered(params.agentId);
    return fromRow(row);
  }

  async remove(agentId: string): Promise<boolean> {
    const params = { agentId: validateAgentId(agentId) };
    return (await query(this.pool, SQL.remove, params)).length > 0;
  }
}
