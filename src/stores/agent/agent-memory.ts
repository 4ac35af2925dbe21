import type { Database } from "../../db/database.js";
import { StateError } from "../../db/errors.js";
import { renderRecall, selectRecalled } from "../../memory/recall.js";
import type { RecallResult, SessionState, Topic } from "../../memory/types.js";
import { checkOptions, checkText } from "../checks.js";
import type { ContextSnapshotStore } from "./context-snapshot-store.js";
import type { FactStore } from "./fact-store.js";
import type { MemoryStateStore } from "./memory-state-store.js";
import type { SessionLifecycle } from "./session-lifecycle.js";
import type { TopicStore } from "./topic-store.js";
import type { SessionInfo } from "./transcript-rows.js";

/** Topics listed by `recover`: enough to choose one to return to, never the whole history. */
const RECOVER_TOPIC_LIMIT = 50;

export interface MemoryRecallOptions {
  sessionId: string;
  /** Recall for this topic; null: for no topic; absent: the session's active topic. */
  topicId?: string | null;
  /** Free text: on_demand (and other) facts sharing a word with it are added. */
  query?: string;
  /** Include `sensitive` facts (default false). */
  includeSensitive?: boolean;
  /** Only facts of these scopes (default: every scope). */
  scopes?: string[];
  /** At most this many query hits (default 20). */
  limit?: number;
}

/** What a fresh process needs to pick a conversation up where it stopped. */
export interface RecoveredMemory extends RecallResult {
  session: SessionInfo;
  /** The session's state, or that of the session it continues through compaction; null: none. */
  state: SessionState | null;
  /** Topics of the session (and those it continues), most recently active first. */
  topics: Topic[];
}

export interface TopicSwitch {
  state: SessionState;
  /** The topic now active (opened and marked active), or null. */
  topic: Topic | null;
  /** The topic active before, paused if it was open; null when there was none. */
  previous: Topic | null;
}

const RECALL_KEYS = ["sessionId", "topicId", "query", "includeSensitive", "scopes", "limit"];

/**
 * An agent's memory: topics, facts, session state and context snapshots, and the two reads built
 * on them. `recover` and `recall` touch session, topic and fact rows only: never the transcript.
 */
export class AgentMemory {
  constructor(
    private readonly db: Database,
    private readonly lifecycle: SessionLifecycle,
    readonly topics: TopicStore,
    readonly facts: FactStore,
    readonly state: MemoryStateStore,
    readonly contexts: ContextSnapshotStore,
  ) {}

  /**
   * Makes `topicId` the session's active topic (null: none). The topic it replaces is paused if it
   * was open, so a later recovery can tell what was set aside from what was finished.
   */
  switchTopic(sessionId: string, topicId: string | null): TopicSwitch {
    return this.db.tx(() => {
      const before = this.state.resolve(sessionId)?.activeTopicId ?? null;
      const state = this.state.patch(sessionId, { activeTopicId: topicId });
      let previous = before === null ? null : (this.topics.get(before) ?? null);
      if (previous && previous.topicId !== topicId && previous.status === "open") {
        previous = this.topics.update(previous.topicId, { status: "paused" });
      }
      const topic = topicId === null ? null : this.topics.activate(topicId);
      return { state, topic, previous: previous?.topicId === topicId ? null : previous };
    });
  }

  /**
   * The active session of a key with its active topic, that topic's summary and open loops, the
   * facts to recall, and the session's other topics; undefined when the key has no active session.
   */
  recover(sessionKey: string): RecoveredMemory | undefined {
    const session = this.lifecycle.active(sessionKey);
    if (!session) return undefined;
    const state = this.state.resolve(session.sessionId) ?? null;
    const topics = this.topics.listLineage(session.sessionId, { limit: RECOVER_TOPIC_LIMIT });
    const recalled = this.recallFor(session.sessionId, this.activeTopic(state), {});
    return { ...recalled, session, state, topics };
  }

  /**
   * Prompt-ready memory for a session: `always` facts, the topic's `topic_bound` facts, and facts
   * the query matches. Sensitive facts only on request; a secret_ref only as its reference.
   */
  recall(options: MemoryRecallOptions): RecallResult {
    checkOptions(options, RECALL_KEYS, "memory.recall");
    const session = this.lifecycle.get(options.sessionId);
    let topic: Topic | null;
    if (options.topicId === undefined) {
      topic = this.activeTopic(this.state.resolve(session.sessionId) ?? null);
    } else if (options.topicId === null) {
      topic = null;
    } else {
      topic = this.topics.require(checkText("topicId", options.topicId, 200));
      if (!this.state.continues(session.sessionId, topic.sessionId)) {
        throw new StateError(
          "E_INVALID_ARGUMENT",
          `topic ${topic.topicId} belongs to session ${topic.sessionId}, which session ${session.sessionId} does not continue`,
          { details: { topicId: topic.topicId, sessionId: session.sessionId } },
        );
      }
    }
    return this.recallFor(session.sessionId, topic, options);
  }

  private activeTopic(state: SessionState | null): Topic | null {
    const id = state?.activeTopicId;
    return id ? (this.topics.get(id) ?? null) : null;
  }

  private recallFor(
    sessionId: string,
    topic: Topic | null,
    options: Omit<MemoryRecallOptions, "sessionId" | "topicId">,
  ): RecallResult {
    if (options.query !== undefined && typeof options.query !== "string") {
      throw new TypeError("Expected memory.recall({ query }) to be a string");
    }
    const filter = options.scopes === undefined ? {} : { scopes: options.scopes };
    const candidates = {
      always: this.facts.always(filter),
      topic: topic ? this.facts.topicBound(topic.topicId, topic.labels, filter) : [],
      query: options.query ? this.facts.search(options.query, filter, options.limit ?? 20) : [],
    };
    const facts = selectRecalled(candidates, {
      includeSensitive: options.includeSensitive === true,
    });
    return { sessionId, topic, facts, text: renderRecall(topic, facts) };
  }
}
