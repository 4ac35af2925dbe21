import { isStateError } from "../db/errors.js";
import type { AgentState } from "../home.js";
import type { SessionEntry, SessionEntryData } from "../stores/agent/session-store.js";
import type { SessionInfo } from "../stores/agent/transcript-rows.js";
import type { JsonValue } from "../stores/json.js";

/** A row of the session list: what a person scans for, not the whole entry (up to ~70 KB). */
export interface SessionEntrySummary {
  sessionKey: string;
  version: number;
  updatedAt: number;
  sessionId: string | null;
  label: string | null;
  chatType: string | null;
  channel: string | null;
  model: string | null;
  /** The session the entry points at; null when it has no session row. */
  session: SessionInfo | null;
}

/** The first of `paths` (dotted, one level deep) that holds a non-empty string. */
function pick(entry: SessionEntryData, ...paths: string[]): string | null {
  for (const path of paths) {
    const [head = "", tail] = path.split(".");
    const value: JsonValue | undefined = entry[head];
    const inner =
      tail === undefined || typeof value !== "object" || value === null || Array.isArray(value)
        ? value
        : value[tail];
    if (typeof inner === "string" && inner !== "") return inner;
  }
  return null;
}

function modelOf(entry: SessionEntryData): string | null {
  const model = pick(entry, "model", "modelOverride");
  const provider = pick(entry, "modelProvider", "providerOverride");
  return provider === null || model === null ? model : `${provider}/${model}`;
}

function sessionOrNull(agent: AgentState, sessionId: string | null): SessionInfo | null {
  if (sessionId === null) return null;
  try {
    return agent.lifecycle.get(sessionId);
  } catch (error) {
    if (isStateError(error, "E_NOT_FOUND") || isStateError(error, "E_INVALID_ID")) return null;
    throw error;
  }
}

export function summarizeEntry(agent: AgentState, entry: SessionEntry): SessionEntrySummary {
  const sessionId = pick(entry.entry, "sessionId");
  return {
    sessionKey: entry.sessionKey,
    version: entry.version,
    updatedAt: entry.updatedAt,
    sessionId,
    label: pick(entry.entry, "label", "displayName", "subject", "origin.label"),
    chatType: pick(entry.entry, "chatType", "origin.chatType"),
    channel: pick(
      entry.entry,
      "channel",
      "lastChannel",
      "deliveryContext.channel",
      "origin.provider",
    ),
    model: modelOf(entry.entry),
    session: sessionOrNull(agent, sessionId),
  };
}
