import type { Database } from "../../db/database.js";
import { KvStore } from "../kv-store.js";
import { AgentMemory } from "./agent-memory.js";
import { RunArtifactStore, ToolArtifactStore } from "./artifact-store.js";
import { CacheStore } from "./cache-store.js";
import type { ColdStore } from "./cold-store.js";
import { ContextSnapshotStore } from "./context-snapshot-store.js";
import { FactStore } from "./fact-store.js";
import { InputStore } from "./input-store.js";
import { MemoryStateStore } from "./memory-state-store.js";
import { SessionLifecycle } from "./session-lifecycle.js";
import { SessionStore } from "./session-store.js";
import { SessionUsageQuery } from "./session-usage.js";
import { SnapshotStore } from "./snapshot-store.js";
import { TopicStore } from "./topic-store.js";
import { TranscriptBranches } from "./transcript-branches.js";
import { TranscriptSearch } from "./transcript-search.js";
import { TranscriptStore } from "./transcript-store.js";
import { UsageQuery } from "./usage-query.js";
import { VfsStore } from "./vfs-store.js";

/** The stores over one agent database, each with its statements prepared once. */
export interface AgentStores {
  readonly kv: KvStore;
  /** Session entries: the routing slots (session keys) and their metadata. */
  readonly sessions: SessionStore;
  /** Session rows: start, reset, compact, restore. */
  readonly lifecycle: SessionLifecycle;
  readonly transcripts: TranscriptStore;
  readonly branches: TranscriptBranches;
  readonly snapshots: SnapshotStore;
  readonly search: TranscriptSearch;
  /** Token usage, cost and events per UTC day, provider and model, from the daily rollups. */
  readonly usage: UsageQuery;
  /** One session's token usage and cost by model, summed from its events (hot or cold). */
  readonly sessionUsage: SessionUsageQuery;
  /** The SQLite scratch filesystems, one per namespace (`vfs.namespace("scratch")`). */
  readonly vfs: VfsStore;
  readonly toolArtifacts: ToolArtifactStore;
  readonly runArtifacts: RunArtifactStore;
  /** Cold storage of idle sessions: move, restore, sweep (reads stay on `transcripts`). */
  readonly cold: ColdStore;
  /** A TTL cache for derived values (embeddings, fetched pages, …). */
  readonly cache: CacheStore;
  /** Topics, facts, session state and context snapshots; `recover` and `recall`. */
  readonly memory: AgentMemory;
}

/**
 * Stores reached through an api/ facade only, kept off `AgentStores` (and so off `AgentState`'s
 * public type): inputs are addressed by agent and session key through `home.inputs`.
 */
export interface InternalAgentStores {
  readonly inputStore: InputStore;
}

/** The input store of an agent made by `defineAgentStores`. */
export function inputStoreOf(agent: AgentStores): InputStore {
  return (agent as AgentStores & InternalAgentStores).inputStore;
}

/** A value made on first use, then kept. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

/**
 * The stores over `db`, each made (its statements prepared) on first use: an agent reopened for one
 * append prepares the transcript statements only, not the hundred-odd of every store.
 */
export function createAgentStores(db: Database, agentId: string): AgentStores {
  return defineAgentStores({}, db, agentId);
}

/** `base` with the agent's stores added as lazy, read-only properties; frozen. */
export function defineAgentStores<Base extends object>(
  base: Base,
  db: Database,
  agentId: string,
): Base & AgentStores {
  const sessions = once(() => new SessionStore(db));
  const transcripts = once(() => new TranscriptStore(db, agentId));
  const branches = once(() => new TranscriptBranches(db, transcripts()));
  const snapshots = once(() => new SnapshotStore(db, transcripts(), branches()));
  const lifecycle = once(
    () => new SessionLifecycle(db, sessions(), transcripts(), branches(), snapshots()),
  );
  const makers: { [K in keyof AgentStores]: () => AgentStores[K] } = {
    kv: once(() => new KvStore(db)),
    sessions,
    lifecycle,
    transcripts,
    branches,
    snapshots,
    search: once(() => new TranscriptSearch(db, agentId, transcripts().index, transcripts().cold)),
    usage: once(() => new UsageQuery(db)),
    sessionUsage: once(() => new SessionUsageQuery(db, () => transcripts().cold)),
    cold: () => transcripts().cold,
    vfs: once(() => new VfsStore(db)),
    toolArtifacts: once(() => new ToolArtifactStore(db)),
    runArtifacts: once(() => new RunArtifactStore(db)),
    cache: once(() => new CacheStore(db)),
    memory: once(
      () =>
        new AgentMemory(
          db,
          lifecycle(),
          new TopicStore(db),
          new FactStore(db),
          new MemoryStateStore(db),
          new ContextSnapshotStore(db),
        ),
    ),
  };
  const properties: PropertyDescriptorMap = {};
  for (const [name, make] of Object.entries(makers)) {
    properties[name] = { get: make, enumerable: true };
  }
  // Not enumerable: it is no part of the agent's public stores.
  properties.inputStore = { get: once(() => new InputStore(db, transcripts(), branches())) };
  return Object.freeze(Object.defineProperties(base, properties)) as Base & AgentStores;
}
