import type { FactCategory, FactSensitivity, RecallPolicy, TopicStatus } from "./taxonomy.js";

/** A line of work within a session, with what it takes to pick it up again. */
export interface Topic {
  topicId: string;
  sessionId: string;
  title: string;
  status: TopicStatus;
  parentTopicId: string | null;
  summaryShort: string;
  summaryLong: string;
  /** Questions and tasks left unfinished on this topic. */
  openLoops: string[];
  /** Lower-case labels; topic_bound facts with a matching tag are recalled with the topic. */
  labels: string[];
  createdAt: number;
  updatedAt: number;
  lastActiveAt: number;
}

/** A transcript event's link to a topic: the event is named, never copied. */
export interface TopicMember {
  sessionId: string;
  eventId: string;
  topicId: string;
  /** How strongly the event belongs to the topic, 0 to 1. */
  score: number;
  /** The event's main topic; an event has at most one. */
  isPrimary: boolean;
  reason: string | null;
  createdAt: number;
}

/** The transcript event a fact was learned from. */
export interface FactSource {
  sessionId: string;
  eventId: string;
}

export interface Fact {
  factId: string;
  scope: string;
  key: string;
  category: FactCategory;
  /** The value; always null for a secret_ref, whose `reference` says where the secret lives. */
  value: string | null;
  /**
   * For a secret_ref: where the secret lives (env:NAME, keychain:…), or null when the stored
   * value is not a usable reference. Null for every other sensitivity.
   */
  reference: string | null;
  sensitivity: FactSensitivity;
  recallPolicy: RecallPolicy;
  /** 0 to 1. */
  confidence: number;
  source: FactSource | null;
  sourceTopicId: string | null;
  tags: string[];
  /** 1 when created, +1 on every change of content. */
  version: number;
  createdAt: number;
  updatedAt: number;
}

/** A fact as it was before an upsert replaced it. */
export interface FactVersion {
  factId: string;
  version: number;
  category: FactCategory;
  /** Null for a secret_ref, and for plain values erased when the fact became a secret_ref. */
  value: string | null;
  reference: string | null;
  sensitivity: FactSensitivity;
  recallPolicy: RecallPolicy;
  confidence: number;
  source: FactSource | null;
  sourceTopicId: string | null;
  validFrom: number;
  replacedAt: number;
}

/** Where a session stands: which topic is active, when it was last compacted, its last turn. */
export interface SessionState {
  sessionId: string;
  activeTopicId: string | null;
  lastCompactedAt: number | null;
  lastTurnId: string | null;
  updatedAt: number;
}

/** Prompt-ready text kept for reuse, per session, topic (or none) and kind. */
export interface ContextSnapshot {
  snapshotId: string;
  sessionId: string;
  topicId: string | null;
  kind: string;
  content: string;
  createdAt: number;
}

/** Why a fact is in a recall: its policy is `always`, it belongs to the topic, or the query hit it. */
export type RecallReason = "always" | "topic" | "query";

export interface RecalledFact extends Fact {
  reason: RecallReason;
}

/** What a prompt needs from memory for one session. */
export interface RecallResult {
  sessionId: string;
  /** The topic recalled for: the one asked for, else the session's active topic, else null. */
  topic: Topic | null;
  facts: RecalledFact[];
  /** The topic and facts rendered as a prompt block. Secret values are never in it. */
  text: string;
}
