import type { Database } from "../../db/database.js";
import { KvStore } from "../kv-store.js";
import { SessionLifecycle } from "./session-lifecycle.js";
import { SessionStore } from "./session-store.js";
import { SnapshotStore } from "./snapshot-store.js";
import { TranscriptBranches } from "./transcript-branches.js";
import { TranscriptSearch } from "./transcript-search.js";
import { TranscriptStore } from "./transcript-store.js";

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
}

export function createAgentStores(db: Database, agentId: string): AgentStores {
  const sessions = new SessionStore(db);
  const transcripts = new TranscriptStore(db, agentId);
  const branches = new TranscriptBranches(db, transcripts);
  const snapshots = new SnapshotStore(db, transcripts, branches);
  return Object.freeze({
    kv: new KvStore(db),
    sessions,
    lifecycle: new SessionLifecycle(db, sessions, transcripts, branches, snapshots),
    transcripts,
    branches,
    snapshots,
    search: new TranscriptSearch(db, agentId),
  });
}
