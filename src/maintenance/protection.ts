/** What the planner knows of one session: read by `facts.ts`, judged by `plan.ts`. */
export interface SessionFacts {
  agentId: string;
  sessionId: string;
  /** Creation order within the agent: breaks ties between sessions created in one millisecond. */
  sessionNo: number;
  sessionKey: string | null;
  createdAt: number;
  /** The latest of the row's update, its last event, and (for a key's current session) the entry's activity. */
  lastActivityAt: number;
  /** Ended by a reset, a compaction or `end()`. */
  ended: boolean;
  /** Its session key's entry carries `archivedAt`. */
  archived: boolean;
  cold: boolean;
  /** Hot events (0 for a cold session). */
  events: number;
  /** Estimated bytes of its hot rows: events, identities, the blobs they reference. */
  hotBytes: number;
  /** Its archive's size while cold. */
  coldBytes: number;
  /** Estimated bytes of its search index rows: they stay in the database while it is cold. */
  indexBytes: number;
  /** Protection signals, one per rule (see `protectionsOf`). */
  pinned: boolean;
  running: boolean;
  forkParent: boolean;
  compactionSource: boolean;
  pendingDelivery: boolean;
  pendingTask: boolean;
}

export type Protection =
  | "active"
  | "running"
  | "pinned"
  | "fork-parent"
  | "compaction-source"
  | "pending-delivery"
  | "pending-task";

/**
 * Activity this recent protects a session whatever the rules say: the age rules and the budget
 * both work on sessions idle for longer.
 */
export const ACTIVE_WINDOW_MS = 24 * 60 * 60 * 1000;

const SIGNALS: readonly [keyof SessionFacts, Protection][] = [
  ["running", "running"],
  ["pinned", "pinned"],
  ["forkParent", "fork-parent"],
  ["compactionSource", "compaction-source"],
  ["pendingDelivery", "pending-delivery"],
  ["pendingTask", "pending-task"],
];

/** Why a session may be neither moved nor pruned at `now`; empty when it may. */
export function protectionsOf(facts: SessionFacts, now: number): Protection[] {
  const found: Protection[] = now - facts.lastActivityAt < ACTIVE_WINDOW_MS ? ["active"] : [];
  for (const [signal, protection] of SIGNALS) if (facts[signal] === true) found.push(protection);
  return found;
}
