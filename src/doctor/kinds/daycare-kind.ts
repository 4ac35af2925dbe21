import { isStateError } from "../../db/errors.js";
import type { AgentState } from "../../home.js";
import type { JsonValue } from "../../stores/json.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { isRecord } from "../../transcript/record.js";
import type { LegacySource } from "../discover.js";
import { parseLegacyJson, readLegacyText } from "../legacy-file.js";
import {
  type DaycareSession,
  daycareSessionId,
  readDaycareHistory,
} from "../sources/daycare-history.js";
import {
  type ImportContext,
  type ImportOutcome,
  type KindHandler,
  problem,
  type SourceScan,
} from "./types.js";

/** Agent-scoped kv where a daycare agent's descriptor and state are kept. */
export const DAYCARE_KV_SCOPE = "daycare";
const BATCH = 500;

function mainKey(agentId: string): string {
  return `agent:${agentId}:main`;
}

function scanHistory(absPath: string, source: LegacySource): SourceScan {
  const scan: SourceScan = { records: 0, problems: [], notes: [] };
  let sessions = 0;
  for (const item of readDaycareHistory(absPath, source.agentId as string)) {
    if (item.kind === "problem") scan.problems.push(problem(item.line, item.reason));
    else if (item.kind === "event") scan.records++;
    else sessions++;
  }
  scan.notes.push(`${Math.max(sessions, 1)} session(s)`);
  return scan;
}

/** Points the agent's main entry at its latest session (the active one). */
function activate(agent: AgentState, sessionId: string, at: number): void {
  agent.lifecycle.attachKey(sessionId, mainKey(agent.agentId), at);
  agent.sessions.patch(mainKey(agent.agentId), (entry) => ({
    ...entry,
    sessionId,
    updatedAt: Math.max(Number(entry?.updatedAt ?? 0), at),
  }));
}

function openSession(
  agent: AgentState,
  session: DaycareSession,
  previous: DaycareSession | null,
  fallbackAt: number,
): void {
  const createdAt = session.startedAt ?? fallbackAt;
  if (previous) agent.lifecycle.markEnded(previous.sessionId, createdAt);
  agent.lifecycle.importSession({
    sessionId: session.sessionId,
    sessionKey: mainKey(agent.agentId),
    createdAt,
    resetReason: session.resetReason,
    resetMessage: session.resetMessage,
    predecessorId: previous?.sessionId ?? null,
  });
  const header: TranscriptEvent = {
    type: "session",
    version: 3,
    id: session.sessionId,
    timestamp: new Date(createdAt).toISOString(),
  };
  agent.transcripts.append(session.sessionId, header, { verbatim: true, ensureHeader: false });
}

function importHistory(context: ImportContext): ImportOutcome {
  const { source } = context;
  const agent = context.home.agent(source.agentId as string);
  const outcome: ImportOutcome = { records: 0, alreadyPresent: 0, problems: [] };
  let current: DaycareSession | null = null;
  let pending: Array<{ line: number; sessionId: string; event: TranscriptEvent }> = [];
  const flush = () => {
    agent.db.tx(() => {
      for (const item of pending) {
        try {
          const result = agent.transcripts.append(item.sessionId, item.event, {
            verbatim: true,
            ensureHeader: false,
          });
          outcome.records++;
          if (result.deduplicated) outcome.alreadyPresent++;
        } catch (error) {
          if (!isStateError(error, "E_CONFLICT")) throw error;
          outcome.problems.push(problem(item.line, (error as Error).message));
        }
      }
    });
    pending = [];
  };
  for (const item of readDaycareHistory(source.absPath, agent.agentId)) {
    if (item.kind === "problem") outcome.problems.push(problem(item.line, item.reason));
    else if (item.kind === "session") {
      flush();
      const previous = current;
      current = item.session;
      agent.db.tx(() => openSession(agent, item.session, previous, source.mtimeMs));
    } else {
      pending.push(item);
      if (pending.length >= BATCH) flush();
    }
  }
  flush();
  agent.db.tx(() => ensureActiveSession(agent, current, source.mtimeMs));
  return outcome;
}

/** The last session is the active one; an agent with no history still gets one empty session. */
function ensureActiveSession(agent: AgentState, last: DaycareSession | null, at: number): void {
  if (last) {
    activate(agent, last.sessionId, last.startedAt ?? at);
    return;
  }
  if (agent.lifecycle.active(mainKey(agent.agentId))) return;
  const session: DaycareSession = {
    sessionId: daycareSessionId(agent.agentId, 1),
    index: 1,
    startedAt: at,
    resetReason: null,
    resetMessage: null,
  };
  openSession(agent, session, null, at);
  activate(agent, session.sessionId, at);
}

function readJsonObject(absPath: string): Record<string, JsonValue> {
  const value: unknown = parseLegacyJson(absPath, readLegacyText(absPath));
  if (!isRecord(value)) throw new Error("not a JSON object");
  return value as Record<string, JsonValue>;
}

/** descriptor.json / state.json: kept whole in the agent's kv (state without the context cache). */
function kvKind(key: "descriptor" | "state"): KindHandler {
  const kvValue = (absPath: string) => {
    const doc = readJsonObject(absPath);
    if (key === "descriptor") return doc;
    const { context: _rebuiltFromHistory, ...rest } = doc;
    return rest;
  };
  return {
    scan: (absPath) => {
      kvValue(absPath);
      return { records: 1, problems: [], notes: [] };
    },
    import: (context) => {
      const agent = context.home.agent(context.source.agentId as string);
      const value = kvValue(context.source.absPath);
      const existing = agent.kv.get(DAYCARE_KV_SCOPE, key);
      agent.db.tx(() => {
        agent.kv.set(DAYCARE_KV_SCOPE, key, value);
        const hasHistory = context.allSources.some(
          (s) => s.kind === "agent-history" && s.agentId === agent.agentId,
        );
        if (!hasHistory) ensureActiveSession(agent, null, context.source.mtimeMs);
      });
      const same = JSON.stringify(existing) === JSON.stringify(value);
      return { records: 1, alreadyPresent: same ? 1 : 0, problems: [] };
    },
  };
}

export const daycareHistoryKind: KindHandler = { scan: scanHistory, import: importHistory };
export const daycareDescriptorKind = kvKind("descriptor");
export const daycareStateKind = kvKind("state");
