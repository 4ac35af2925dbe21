import type { Database } from "../../db/database.js";
import type { AgentStores } from "./agent-stores.js";
import type { SearchHit, SearchOptions, TranscriptSearch } from "./transcript-search.js";

/**
 * One agent's data plane: its database and the stores over it. From `home.agent()` it is valid
 * until the pool closes the agent to make room for others; hold it with `withAgent` or `pinAgent`.
 */
export interface AgentState extends AgentStores {
  readonly agentId: string;
  readonly db: Database;
}

/** An agent held open against eviction until `release()` (idempotent). */
export interface AgentPin {
  readonly agent: AgentState;
  release(): void;
}

export interface AgentOpenOptions {
  /** Create and register the agent when it is new (default true). */
  create?: boolean;
}

/** What a one-off read of an agent offers (`AgentSource.readAgent`): an `AgentState` is one. */
export interface AgentReader {
  readonly agentId: string;
  readonly search: TranscriptSearch;
}

/**
 * What the home-wide facades (`home.sessions`, `home.transcripts`, `home.memory`) need of a home:
 * its agents, opened through its pool. `StateHome` is one; declared here so the facades depend on
 * this, not on the home that builds them.
 */
export interface AgentSource {
  agent(agentId: string, options?: AgentOpenOptions): AgentState;
  withAgent<R>(agentId: string, fn: (agent: AgentState) => R, options?: AgentOpenOptions): R;
  pinAgent(agentId: string, options?: AgentOpenOptions): AgentPin;
  listAgents(): readonly { agentId: string }[];
  /**
   * Runs `fn` for a one-off read of an existing agent: over its open state when the pool has it
   * open (left where it is in the pool), else over a read-only connection closed before this
   * returns, so a read of every agent holds one connection at a time and leaves the pool as it was.
   */
  readAgent<R>(agentId: string, fn: (agent: AgentReader) => R): R;
  /**
   * Hands `each` every agent's search hits, in the order of `agentIds`, every agent read as
   * `readAgent` reads it; several may be searched at once on other threads. Throws what the first
   * agent (in that order) whose search failed threw.
   */
  searchAgents(
    agentIds: readonly string[],
    query: string,
    options: SearchOptions,
    each: (hits: SearchHit[]) => void,
  ): void;
}
