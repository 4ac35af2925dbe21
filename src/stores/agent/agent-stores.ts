import type { Database } from "../../db/database.js";
import { KvStore } from "../kv-store.js";
import { AgentMemory } from "./agent-memory.js";
import { RunArtifactStore, ToolArtifactStore } from "./artifact-store.js";
import { CacheStore } from "./cache-store.js";
import { ContextSnapshotStore } from "./context-snapshot-store.js";
import { FactStore } from "./fact-store.js";
import { MemoryStateStore } from "./memory-state-store.js";
import { SessionLifecycle } from "./session-lifecycle.js";
import { SessionStore } from "./session-store.js";
import { SnapshotStore } from "./snapshot-store.js";
import { TopicStore } from "./topic-store.js";
import { TranscriptBranches } from "./transcript-branches.js";
import { TranscriptSearch } from "./transcript-search.js";
import { TranscriptStore } from "./transcript-store.js";
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
  /** The SQLite scratch filesystems, one per namespace (`vfs.namespace("scratch")`). */
  readonly vfs: VfsStore;
  readonly toolArtifacts: ToolArtifactStore;
  readonly runArtifacts: RunArtifactStore;
  /** A TTL cache for derived values (embeddings, fetched pages, …). */
  readonly cache: CacheStore;
  /** Topics, facts, session state and context snapshots; `recover` and `recall`. */
  readonly memory: AgentMemory;
}

export function createAgentStores(db: Database, agentId: string): AgentStores {
  const sessions = new SessionStore(db);
  const transcripts = new TranscriptStore(db, agentId);
  const branches = new TranscriptBranches(db, transcripts);
  const snapshots = new SnapshotStore(db, transcripts, branches);
  const lifecycle = new SessionLifecycle(db, sessions, transcripts, branches, snapshots);
  return Object.freeze({
    kv: new KvStore(db),
    sessions,
    lifecycle,
    transcripts,
    branches,
    snapshots,
    search: new TranscriptSearch(db, agentId, transcripts.index),
    vfs: new VfsStore(db),
    toolArtifacts: new ToolArtifactStore(db),
    runArtifacts: new RunArtifactStore(db),
    cache: new CacheStore(db),
    memory: new AgentMemory(
      db,
      lifecycle,
      new TopicStore(db),
      new FactStore(db),
      new MemoryStateStore(db),
      new ContextSnapshotStore(db),
    ),
  });
}
