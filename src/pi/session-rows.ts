import type { FileEntry } from "@mariozechner/pi-coding-agent";
import { isStateError, StateError } from "../db/errors.js";
import type { AgentState } from "../home.js";
import type { SessionEntryData } from "../stores/agent/session-store.js";
import type { NewTranscriptEvent } from "../stores/agent/transcript-store.js";
import { encodeEvent } from "../transcript/jsonl-codec.js";
import type { SessionSummary } from "./session-summary.js";

/** The agent kv scope holding one `SessionSummary` per session, keyed by session id. */
export const SUMMARY_SCOPE = "pi.sessions";

/** Where a manager's session stands in the database, as far as that manager knows. */
export interface StoreTarget {
  agent: AgentState;
  sessionId: string;
  /** The seq of the last event this manager read or wrote (0: it has stored nothing yet). */
  knownSeq: number;
  sessionKey: string | undefined;
}

/** Seq of the session's last event, 0 when the session has none. */
export function storedSeq(agent: AgentState, sessionId: string): number {
  try {
    return agent.branches.session(sessionId).eventCount;
  } catch (error) {
    if (isStateError(error, "E_NOT_FOUND")) return 0;
    throw error;
  }
}

/** Every event of the session in order, and the seq of the last one. */
export function loadEntries(
  agent: AgentState,
  sessionId: string,
): { entries: FileEntry[]; seq: number } {
  const entries: FileEntry[] = [];
  let seq = 0;
  for (const stored of agent.transcripts.events(sessionId)) {
    entries.push(stored.event as unknown as FileEntry);
    seq = stored.seq;
  }
  return { entries, seq };
}

function alreadyStored(agent: AgentState, sessionId: string, entries: readonly FileEntry[]) {
  return entries.every((entry) => {
    const stored = agent.transcripts.get(sessionId, entry.id);
    return stored !== undefined && encodeEvent(stored.event) === JSON.stringify(entry);
  });
}

/**
 * Stores entries (a new session's header first) in one transaction, with the session's summary
 * and, given a key, its index entry. Refuses with E_CONFLICT when another writer appended to the
 * session since this manager last read it: appending after a tail it never saw would graft its
 * entry onto a stale leaf. Repeating a call whose entries are all stored is a no-op.
 */
export function storeEntries(
  target: StoreTarget,
  entries: readonly FileEntry[],
  summary: SessionSummary,
  nameChanged: boolean,
): number {
  const { agent, sessionId, sessionKey } = target;
  return agent.db.tx(() => {
    const seq = storedSeq(agent, sessionId);
    if (seq !== target.knownSeq) {
      if (seq > 0 && alreadyStored(agent, sessionId, entries)) return seq;
      throw new StateError(
        "E_CONFLICT",
        `session ${sessionId} of agent ${agent.agentId} changed since this manager read it (it knew ${target.knownSeq} events, there are ${seq}): open it again to continue from its current tail`,
        { details: { agentId: agent.agentId, sessionId, knownSeq: target.knownSeq, seq } },
      );
    }
    const events = entries as unknown as NewTranscriptEvent[];
    const options = sessionKey === undefined ? { verbatim: true } : { verbatim: true, sessionKey };
    const results = agent.transcripts.appendMany(sessionId, events, options);
    agent.kv.set(SUMMARY_SCOPE, sessionId, summary as never);
    if (sessionKey !== undefined) {
      pointKey(agent, sessionKey, sessionId, target.knownSeq === 0, nameChanged ? summary : null);
    }
    return results.at(-1)?.seq ?? seq;
  });
}

/**
 * Keeps the key's index entry on the session: its id and last update, and its name when it
 * changed. A new session under the key ends the one the key pointed at before.
 */
function pointKey(
  agent: AgentState,
  sessionKey: string,
  sessionId: string,
  isNew: boolean,
  named: SessionSummary | null,
): void {
  const now = Date.now();
  const previous = agent.sessions.get(sessionKey)?.entry.sessionId;
  if (isNew && typeof previous === "string" && previous !== sessionId) {
    if (storedSeq(agent, previous) > 0) agent.lifecycle.markEnded(previous, now);
  }
  agent.sessions.patch(sessionKey, (entry) => {
    const next: SessionEntryData = { ...entry, sessionId, updatedAt: now };
    if (named === null) return next;
    delete next.displayName;
    return named.name === undefined ? next : { ...next, displayName: named.name };
  });
}
