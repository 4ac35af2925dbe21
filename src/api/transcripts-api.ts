import type { AgentSource, AgentState } from "../stores/agent/agent-state.js";
import type { NewSnapshot, TranscriptSnapshot } from "../stores/agent/snapshot-store.js";
import type { ForkOptions } from "../stores/agent/transcript-branches.js";
import type { SearchHit, SearchOptions } from "../stores/agent/transcript-search.js";
import type {
  AppendOptions,
  AppendResult,
  NewTranscriptEvent,
  ReadOptions,
  SessionScope,
  StoredEvent,
} from "../stores/agent/transcript-store.js";
import type { ContextEntry } from "../transcript/context.js";
import type { TranscriptTree } from "../transcript/tree.js";

const NO_CREATE = Object.freeze({ create: false });

/** A transcript's identity: the agent (its database) and the session (its rows). */
export interface TranscriptScope {
  agentId: string;
  sessionId: string;
}

export interface HomeSearchOptions extends SearchOptions {
  /** Only this agent (default: every registered agent). */
  agentId?: string;
}

/**
 * Transcripts addressed by `{ agentId, sessionId }` and nothing else: no path, file name or
 * locator is ever an identity. Reads never create an agent; appends create and register it.
 */
export class TranscriptsApi {
  constructor(private readonly home: AgentSource) {}

  private open(scope: { agentId: string }): AgentState {
    return this.home.agent(scope.agentId, { create: false });
  }

  append(scope: TranscriptScope, event: NewTranscriptEvent, options?: AppendOptions): AppendResult {
    return this.home.agent(scope.agentId).transcripts.append(scope.sessionId, event, options);
  }

  appendMany(
    scope: TranscriptScope,
    events: readonly NewTranscriptEvent[],
    options?: Omit<AppendOptions, "idempotencyKey">,
  ): AppendResult[] {
    return this.home.agent(scope.agentId).transcripts.appendMany(scope.sessionId, events, options);
  }

  read(scope: TranscriptScope, options?: ReadOptions): StoredEvent[] {
    return this.open(scope).transcripts.read(scope.sessionId, options);
  }

  tail(scope: TranscriptScope, n?: number): StoredEvent[] {
    return this.open(scope).transcripts.tail(scope.sessionId, n);
  }

  get(scope: TranscriptScope, eventId: string): StoredEvent | undefined {
    return this.open(scope).transcripts.get(scope.sessionId, eventId);
  }

  /** The session as JSONL lines; the agent stays pinned open until the iteration ends. */
  *exportJsonl(scope: TranscriptScope): IterableIterator<string> {
    const { agent, release } = this.home.pinAgent(scope.agentId, { create: false });
    try {
      yield* agent.transcripts.exportJsonl(scope.sessionId);
    } finally {
      release();
    }
  }

  /** Sessions with a log, most recent first, of one agent or of all. */
  listScopes(options: { agentId?: string; limit?: number } = {}): SessionScope[] {
    const limit = options.limit ?? 1000;
    const agents = options.agentId
      ? [options.agentId]
      : this.home.listAgents().map((a) => a.agentId);
    return agents
      .flatMap((agentId) =>
        this.home.withAgent(agentId, (agent) => agent.transcripts.listScopes(limit), NO_CREATE),
      )
      .sort((a, b) => b.updatedAt - a.updatedAt || a.sessionId.localeCompare(b.sessionId))
      .slice(0, limit);
  }

  tree(scope: TranscriptScope): TranscriptTree {
    return this.open(scope).branches.tree(scope.sessionId);
  }

  branch(scope: TranscriptScope, eventId: string, options?: { summary?: string }): string {
    return this.open(scope).branches.branch(scope.sessionId, eventId, options);
  }

  label(scope: TranscriptScope, targetId: string, label: string | null): AppendResult {
    return this.open(scope).branches.label(scope.sessionId, targetId, label);
  }

  fork(scope: TranscriptScope, options?: ForkOptions): TranscriptScope {
    const session = this.open(scope).branches.fork(scope.sessionId, options);
    return { agentId: scope.agentId, sessionId: session.sessionId };
  }

  context(scope: TranscriptScope, options?: { leafId?: string }): ContextEntry[] {
    return this.open(scope).branches.context(scope.sessionId, options);
  }

  snapshot(scope: TranscriptScope, input: NewSnapshot): TranscriptSnapshot {
    return this.open(scope).snapshots.create(scope.sessionId, input);
  }

  snapshots(scope: TranscriptScope): TranscriptSnapshot[] {
    return this.open(scope).snapshots.list(scope.sessionId);
  }

  restoreSnapshot(scope: TranscriptScope, snapshotId: string): ContextEntry[] {
    return this.open(scope).snapshots.restore(scope.sessionId, snapshotId);
  }

  /**
   * Ranked full-text search over one agent or all of them, best hits first. Across agents the
   * hits are merged by their rank within their own agent (see `mergeByRank`).
   */
  search(query: string, options: HomeSearchOptions = {}): SearchHit[] {
    const { agentId, ...rest } = options;
    const limit = rest.limit ?? 20;
    if (agentId) {
      return this.home.withAgent(agentId, (agent) => agent.search.search(query, rest), NO_CREATE);
    }
    // Each agent read bare and closed again (the pool is left as it was); only the best `limit`
    // hits so far are kept.
    const ids = this.home.listAgents().map((agent) => agent.agentId);
    let best: RankedHit[] = [];
    this.home.searchAgents(ids, query, rest, (hits) => {
      best = mergeByRank(best, hits, limit);
    });
    return best.map(({ hit }) => hit);
  }
}

/** A hit and its rank within its own agent's hits (0 for the best). */
interface RankedHit {
  hit: SearchHit;
  rank: number;
}

/**
 * Merges one more agent's hits (best first) into the best `limit` so far. bm25 scores of
 * different agents come from different FTS5 indexes, whose term statistics differ, so they are not
 * comparable: every agent's best hit comes before any agent's second, and so on; within one rank,
 * by score as a rough guide, then by agent id. That order is total, so merging agent by agent and
 * cutting at `limit` each time keeps the same hits as sorting them all at once.
 */
function mergeByRank(best: RankedHit[], hits: readonly SearchHit[], limit: number): RankedHit[] {
  if (hits.length === 0) return best;
  const ranked = [...best, ...hits.map((hit, rank) => ({ hit, rank }))];
  ranked.sort(
    (a, b) =>
      a.rank - b.rank ||
      a.hit.score - b.hit.score ||
      (a.hit.agentId < b.hit.agentId ? -1 : a.hit.agentId > b.hit.agentId ? 1 : 0),
  );
  return ranked.slice(0, limit);
}
