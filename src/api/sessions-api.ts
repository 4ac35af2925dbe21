import type { AgentSource, AgentState } from "../stores/agent/agent-state.js";
import type {
  CompactOptions,
  ResetOptions,
  RestoredSession,
  StartOptions,
} from "../stores/agent/session-lifecycle.js";
import type {
  PatchOptions,
  SessionEntry,
  SessionEntryData,
  SessionListOptions,
  SessionListPage,
  SessionPatch,
  UpsertOptions,
} from "../stores/agent/session-store.js";
import type { TranscriptSnapshot } from "../stores/agent/snapshot-store.js";
import type { SessionInfo } from "../stores/agent/transcript-rows.js";

/**
 * Session entries and session lifecycle addressed by `(agentId, sessionKey)`: the home resolves
 * the agent's database. Reads never create an agent; writes create and register it.
 */
export class SessionsApi {
  constructor(private readonly home: AgentSource) {}

  private read(agentId: string): AgentState {
    return this.home.agent(agentId, { create: false });
  }

  private write(agentId: string): AgentState {
    return this.home.agent(agentId);
  }

  get(agentId: string, sessionKey: string): SessionEntry | undefined {
    return this.read(agentId).sessions.get(sessionKey);
  }

  upsert(
    agentId: string,
    sessionKey: string,
    entry: SessionEntryData,
    options?: UpsertOptions,
  ): SessionEntry {
    return this.write(agentId).sessions.upsert(sessionKey, entry, options);
  }

  patch(
    agentId: string,
    sessionKey: string,
    patch: SessionPatch,
    options?: PatchOptions,
  ): SessionEntry {
    return this.write(agentId).sessions.patch(sessionKey, patch, options);
  }

  delete(agentId: string, sessionKey: string): boolean {
    return this.read(agentId).sessions.delete(sessionKey);
  }

  list(agentId: string, options?: SessionListOptions): SessionListPage {
    return this.read(agentId).sessions.list(options);
  }

  start(agentId: string, sessionKey: string, options?: StartOptions): SessionInfo {
    return this.write(agentId).lifecycle.start(sessionKey, options);
  }

  ensure(agentId: string, sessionKey: string, options?: StartOptions): SessionInfo {
    return this.write(agentId).lifecycle.ensure(sessionKey, options);
  }

  reset(agentId: string, sessionKey: string, options?: ResetOptions): SessionInfo {
    return this.write(agentId).lifecycle.reset(sessionKey, options);
  }

  compact(
    agentId: string,
    sessionKey: string,
    options: CompactOptions,
  ): { session: SessionInfo; snapshot: TranscriptSnapshot } {
    return this.write(agentId).lifecycle.compact(sessionKey, options);
  }

  end(agentId: string, sessionKey: string): SessionInfo | undefined {
    return this.read(agentId).lifecycle.end(sessionKey);
  }

  active(agentId: string, sessionKey: string): SessionInfo | undefined {
    return this.read(agentId).lifecycle.active(sessionKey);
  }

  /** Every session a key has had, oldest first. */
  history(agentId: string, sessionKey: string): SessionInfo[] {
    return this.read(agentId).lifecycle.list(sessionKey);
  }

  session(agentId: string, sessionId: string): SessionInfo {
    return this.read(agentId).lifecycle.get(sessionId);
  }

  restore(agentId: string, sessionKey: string): RestoredSession | undefined {
    return this.read(agentId).lifecycle.restore(sessionKey);
  }
}
