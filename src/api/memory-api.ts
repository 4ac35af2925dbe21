import type {
  ContextSnapshot,
  Fact,
  FactVersion,
  RecallResult,
  SessionState,
  Topic,
  TopicMember,
} from "../memory/types.js";
import type {
  MemoryRecallOptions,
  RecoveredMemory,
  TopicSwitch,
} from "../stores/agent/agent-memory.js";
import type { AgentSource, AgentState } from "../stores/agent/agent-state.js";
import type {
  ContextSnapshotListOptions,
  ContextSnapshotQuery,
  NewContextSnapshot,
} from "../stores/agent/context-snapshot-store.js";
import type { FactListOptions, NewFact } from "../stores/agent/fact-store.js";
import type { SessionStatePatch } from "../stores/agent/memory-state-store.js";
import type {
  NewTopic,
  NewTopicMember,
  TopicListOptions,
  TopicPatch,
} from "../stores/agent/topic-rows.js";
import type { TranscriptScope } from "./transcripts-api.js";

export interface RecallOptions extends MemoryRecallOptions {
  agentId: string;
}

/**
 * Memory addressed by agent and session: topics and their events, facts, session state, context
 * snapshots, and the reads a restart needs (`recover`, `recall`). Reads never create an agent.
 */
export class MemoryApi {
  constructor(private readonly home: AgentSource) {}

  private read(agentId: string): AgentState {
    return this.home.agent(agentId, { create: false });
  }

  private write(agentId: string): AgentState {
    return this.home.agent(agentId);
  }

  createTopic(ref: TranscriptScope, topic: NewTopic): Topic {
    return this.write(ref.agentId).memory.topics.create(ref.sessionId, topic);
  }

  updateTopic(agentId: string, topicId: string, patch: TopicPatch): Topic {
    return this.write(agentId).memory.topics.update(topicId, patch);
  }

  topic(agentId: string, topicId: string): Topic | undefined {
    return this.read(agentId).memory.topics.get(topicId);
  }

  /** A session's topics, most recently active first. */
  topics(ref: TranscriptScope, options?: TopicListOptions): Topic[] {
    return this.read(ref.agentId).memory.topics.list(ref.sessionId, options);
  }

  /** Links a transcript event of the topic's session to the topic. */
  link(agentId: string, topicId: string, member: NewTopicMember): TopicMember {
    return this.write(agentId).memory.topics.link(topicId, member);
  }

  members(agentId: string, topicId: string, options?: { limit?: number }): TopicMember[] {
    return this.read(agentId).memory.topics.members(topicId, options);
  }

  /** Makes a topic the session's active one (null: none); the previous one is paused. */
  switchTopic(ref: TranscriptScope, topicId: string | null): TopicSwitch {
    return this.write(ref.agentId).memory.switchTopic(ref.sessionId, topicId);
  }

  state(ref: TranscriptScope): SessionState | undefined {
    return this.read(ref.agentId).memory.state.get(ref.sessionId);
  }

  patchState(ref: TranscriptScope, patch: SessionStatePatch): SessionState {
    return this.write(ref.agentId).memory.state.patch(ref.sessionId, patch);
  }

  /** Creates or changes the fact at `(scope, key)`, keeping the replaced version in history. */
  upsertFact(agentId: string, fact: NewFact): Fact {
    return this.write(agentId).memory.facts.upsert(fact);
  }

  fact(agentId: string, scope: string, key: string): Fact | undefined {
    return this.read(agentId).memory.facts.get(scope, key);
  }

  facts(agentId: string, options?: FactListOptions): Fact[] {
    return this.read(agentId).memory.facts.list(options);
  }

  /** Earlier versions of a fact, newest first. */
  factHistory(agentId: string, factId: string): FactVersion[] {
    return this.read(agentId).memory.facts.history(factId);
  }

  deleteFact(agentId: string, scope: string, key: string): boolean {
    return this.read(agentId).memory.facts.delete(scope, key);
  }

  putContext(ref: TranscriptScope, snapshot: NewContextSnapshot): ContextSnapshot {
    return this.write(ref.agentId).memory.contexts.put(ref.sessionId, snapshot);
  }

  /** The newest context snapshot of a kind for the session or one of its topics. */
  latestContext(ref: TranscriptScope, query: ContextSnapshotQuery): ContextSnapshot | undefined {
    return this.read(ref.agentId).memory.contexts.latest(ref.sessionId, query);
  }

  contexts(ref: TranscriptScope, options?: ContextSnapshotListOptions): ContextSnapshot[] {
    return this.read(ref.agentId).memory.contexts.list(ref.sessionId, options);
  }

  /**
   * What a fresh process needs to resume a session key: the active session, its active topic
   * with summary and open loops, the facts to recall and the other topics. Reads no transcript.
   */
  recover(agentId: string, sessionKey: string): RecoveredMemory | undefined {
    return this.read(agentId).memory.recover(sessionKey);
  }

  /** Prompt-ready memory for a session; see `AgentMemory.recall`. */
  recall(options: RecallOptions): RecallResult {
    if (typeof options !== "object" || options === null) {
      throw new TypeError("Expected an options object for memory.recall");
    }
    const { agentId, ...rest } = options;
    return this.read(agentId).memory.recall(rest);
  }
}
