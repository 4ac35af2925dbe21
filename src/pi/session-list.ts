import type { SessionInfo } from "@mariozechner/pi-coding-agent";
import type { AgentState } from "../home.js";
import { loadEntries, SUMMARY_SCOPE } from "./session-rows.js";
import { messageText, type SessionSummary, summarize } from "./session-summary.js";

const PAGE = 10_000;

function summaries(agent: AgentState): Map<string, SessionSummary> {
  const found = new Map<string, SessionSummary>();
  let after = "";
  for (;;) {
    const page = agent.kv.list<SessionSummary>(SUMMARY_SCOPE, { after, limit: PAGE });
    for (const row of page) found.set(row.key, row.value);
    if (page.length < PAGE) return found;
    after = page.at(-1)?.key ?? after;
  }
}

/**
 * The summary of a session written by someone else (an import by `doctor --fix`), read from its
 * entries once and kept, so the next list finds it. Undefined for a log without a pi header.
 */
function summarizeStored(agent: AgentState, sessionId: string): SessionSummary | undefined {
  const { entries } = loadEntries(agent, sessionId);
  if (entries[0]?.type !== "session") return undefined;
  const summary = summarize(entries);
  agent.kv.set(SUMMARY_SCOPE, sessionId, summary as never);
  return summary;
}

function firstMessage(agent: AgentState, sessionId: string, summary: SessionSummary): string {
  if (summary.firstMessage !== undefined) return summary.firstMessage;
  if (summary.firstMessageId === undefined) return "(no messages)";
  const stored = agent.transcripts.get(sessionId, summary.firstMessageId)?.event.message;
  const text = typeof stored === "object" && stored !== null ? messageText(stored) : undefined;
  return text || "(no messages)";
}

function nameOf(agent: AgentState, sessionId: string, summary: SessionSummary) {
  if (summary.nameId === undefined) return summary.name;
  const name = agent.transcripts.get(sessionId, summary.nameId)?.event.name;
  return typeof name === "string" ? name.trim() : undefined;
}

/** Every user and assistant text of the session, joined as pi's list does; read when asked. */
function allMessagesText(agent: AgentState, sessionId: string): string {
  const texts: string[] = [];
  for (const { event } of agent.transcripts.events(sessionId)) {
    if (event.type !== "message" || typeof event.message !== "object") continue;
    const text = messageText(event.message as object);
    if (text) texts.push(text);
  }
  return texts.join(" ");
}

function toInfo(
  agent: AgentState,
  sessionId: string,
  summary: SessionSummary,
  updatedAt: () => number,
): SessionInfo {
  const created = Date.parse(summary.created);
  const modified =
    summary.lastActivity !== undefined && summary.lastActivity > 0
      ? summary.lastActivity
      : Number.isNaN(created)
        ? updatedAt()
        : created;
  const info: SessionInfo = {
    path: sessionId,
    id: sessionId,
    cwd: summary.cwd,
    name: nameOf(agent, sessionId, summary),
    parentSessionPath: summary.parentSession,
    created: new Date(created),
    modified: new Date(modified),
    messageCount: summary.messageCount,
    firstMessage: firstMessage(agent, sessionId, summary),
    allMessagesText: "",
  };
  // Reading every message is what makes pi's list slow: done only for a caller that reads it.
  Object.defineProperty(info, "allMessagesText", {
    enumerable: true,
    get: () => allMessagesText(agent, sessionId),
  });
  return info;
}

/**
 * pi's `SessionInfo` of every session of the agent (or those started in `cwd`), most recently
 * active first. `path` holds the session id: what `AgentStateSessionManager.open` takes.
 */
export function listSessions(agent: AgentState, cwd?: string): SessionInfo[] {
  const known = summaries(agent);
  const infos: SessionInfo[] = [];
  // The ids alone, in no order (sorted below by pi's own times): reading each session's last
  // event for its recency cost more than the rest of the list.
  for (const sessionId of agent.transcripts.sessionIds()) {
    const summary = known.get(sessionId) ?? summarizeStored(agent, sessionId);
    if (summary === undefined || (cwd !== undefined && summary.cwd !== cwd)) continue;
    infos.push(
      toInfo(agent, sessionId, summary, () => agent.branches.session(sessionId).updatedAt),
    );
  }
  return infos.sort(
    (a, b) => b.modified.getTime() - a.modified.getTime() || a.id.localeCompare(b.id),
  );
}

/** The session of `cwd` written to last, as pi's `continueRecent` picks the newest file. */
export function mostRecentSession(agent: AgentState, cwd: string): string | undefined {
  const known = summaries(agent);
  for (const scope of agent.transcripts.listScopes(100_000)) {
    const summary = known.get(scope.sessionId) ?? summarizeStored(agent, scope.sessionId);
    if (summary?.cwd === cwd) return scope.sessionId;
  }
  return undefined;
}
