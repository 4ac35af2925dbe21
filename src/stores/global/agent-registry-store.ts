import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { validateAgentId } from "../../ids.js";
import type { Clock } from "../checks.js";
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
} from "./agent-registry-rows.js";
import { AGENT_REGISTRY_SQL as SQL } from "./agent-registry-sql.js";

export type {
  AgentListOptions,
  AgentRefresh,
  AgentRegistration,
  RegisteredAgent,
} from "./agent-registry-rows.js";

/**
 * `agents` and `agent_databases` in the global database: which agents the home has, where each
 * one's database is, its schema version, size and last quick_check.
 */
export class AgentRegistryStore {
  private readonly clock: Clock;
  private readonly upsertAgent: SqlStatement;
  private readonly upsertDatabase: SqlStatement;
  private readonly update: SqlStatement;
  private readonly selectOne: SqlStatement<RegisteredAgentRow>;
  private readonly selectPage: SqlStatement<RegisteredAgentRow>;
  private readonly selectAll: SqlStatement<RegisteredAgentRow>;
  private readonly delete: SqlStatement;
  private readonly selectRegistration: SqlStatement<{
    created_at: number;
    schema_version: number | null;
  }>;
  private readonly selectExists: SqlStatement;

  constructor(
    private readonly db: Database,
    { clock = Date.now }: { clock?: Clock } = {},
  ) {
    this.clock = clock;
    // Prepared on first use: every home opens this store, and most opens use two of these.
    this.upsertAgent = db.prepareOnUse(SQL.upsertAgent);
    this.upsertDatabase = db.prepareOnUse(SQL.upsertDatabase);
    this.update = db.prepareOnUse(SQL.refresh);
    this.selectOne = db.prepareOnUse(SQL.select);
    this.selectPage = db.prepareOnUse(SQL.page);
    this.selectAll = db.prepareOnUse(SQL.all);
    this.delete = db.prepareOnUse(SQL.remove);
    this.selectRegistration = db.prepareOnUse(SQL.registration);
    this.selectExists = db.prepareOnUse(SQL.exists);
  }

  /**
   * Records the agent's database (path, schema version, size; last seen now), creating its entry
   * on first registration; a later one keeps its `createdAt`.
   */
  register(agentId: string, registration: AgentRegistration): RegisteredAgent {
    const params = registerParams(agentId, registration, this.clock());
    return this.db.tx(() => {
      this.upsertAgent.run(params);
      this.upsertDatabase.run(params);
      return fromRow(this.selectOne.get(params) as RegisteredAgentRow);
    });
  }

  /** Records the database's size (and quick_check) as of now; E_NOT_FOUND for an unknown agent. */
  refresh(agentId: string, refresh: AgentRefresh): RegisteredAgent {
    const params = refreshParams(agentId, refresh, this.clock());
    return this.db.tx(() => {
      if (this.update.get(params) === undefined) throw agentNotRegistered(params.agentId);
      return fromRow(this.selectOne.get(params) as RegisteredAgentRow);
    });
  }

  get(agentId: string): RegisteredAgent | undefined {
    const row = this.selectOne.get({ agentId: validateAgentId(agentId) });
    return row ? fromRow(row) : undefined;
  }

  /** Registered agents by id (bytewise), `after` the last of the previous page. */
  list(options: AgentListOptions = {}): RegisteredAgent[] {
    return this.selectPage.all(listParams(options)).map(fromRow);
  }

  /** Every registered agent, by id. */
  listAll(): RegisteredAgent[] {
    return this.selectAll.all().map(fromRow);
  }

  /** Forgets the agent (its database file stays); false when it was not registered. */
  remove(agentId: string): boolean {
    return this.delete.get({ agentId: validateAgentId(agentId) }) !== undefined;
  }

  /** When the agent was first registered and its recorded schema version (null: none yet). */
  registration(agentId: string) {
    return this.selectRegistration.get({ agentId });
  }

  has(agentId: string): boolean {
    return this.selectExists.get({ agentId }) !== undefined;
  }
}
