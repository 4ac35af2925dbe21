import { createHash } from "node:crypto";
import type { TranscriptEvent } from "../../transcript/event.js";
import { isRecord } from "../../transcript/record.js";
import { readJsonLines } from "../line-reader.js";

/** A conversation of a daycare agent: history.jsonl starts a new one at each start/reset. */
export interface DaycareSession {
  sessionId: string;
  /** 1-based position in the file. */
  index: number;
  startedAt: number | null;
  resetReason: "start" | "reset" | null;
  resetMessage: string | null;
}

export type DaycareItem =
  | { kind: "session"; line: number; session: DaycareSession }
  | { kind: "event"; line: number; sessionId: string; event: TranscriptEvent }
  | { kind: "problem"; line: number; reason: string };

type HistoryRecord = Record<string, unknown> & { type: string; at: number };

export function daycareSessionId(agentId: string, index: number): string {
  return `${agentId}-session-${index}`;
}

function eventId(agentId: string, line: number): string {
  return createHash("sha256").update(`daycare\n${agentId}\n${line}`).digest("hex").slice(0, 8);
}

const nonEmpty = (v: unknown): boolean => typeof v === "string" && v !== "";

/** Why a record cannot be imported, or null. Mirrors what the daycare reader accepted. */
function invalid(record: Record<string, unknown>): string | null {
  if (typeof record.type !== "string") return 'missing string "type"';
  if (typeof record.at !== "number" || !Number.isFinite(record.at)) return 'missing numeric "at"';
  switch (record.type) {
    case "user_message":
    case "assistant_message":
    case "note":
      return typeof record.text === "string" ? null : `${record.type} without string "text"`;
    case "tool_result":
      return nonEmpty(record.toolCallId) && isRecord(record.output)
        ? null
        : "tool_result needs toolCallId and output";
    case "rlm_start":
    case "rlm_tool_call":
    case "rlm_tool_result":
    case "rlm_complete": {
      if (!nonEmpty(record.toolCallId)) return `${record.type} with an empty toolCallId`;
      const count = record.toolCallCount;
      return count === undefined || (Number.isInteger(count) && (count as number) >= 0)
        ? null
        : `${record.type} with a negative toolCallCount`;
    }
    default:
      return null;
  }
}

function toMessage(record: HistoryRecord): Record<string, unknown> | null {
  const { type, at, ...rest } = record;
  if (type === "user_message") {
    const { text, ...more } = rest;
    return { role: "user", content: [{ type: "text", text }], timestamp: at, ...more };
  }
  if (type === "assistant_message") {
    const { text, toolCalls, ...more } = rest;
    const calls = Array.isArray(toolCalls) ? toolCalls : [];
    const content = [...(text === "" ? [] : [{ type: "text", text }]), ...calls];
    return { role: "assistant", content, timestamp: at, ...more };
  }
  if (type === "tool_result") {
    const output = rest.output as Record<string, unknown>;
    const { toolMessage, ...more } = output;
    const message = isRecord(toolMessage)
      ? toolMessage
      : { role: "toolResult", toolCallId: rest.toolCallId, content: [] };
    return Object.keys(more).length > 0 ? { ...message, details: more } : message;
  }
  return null;
}

/** One history record as a transcript event: messages stay messages, the rest become `custom`. */
function toEvent(record: HistoryRecord, id: string, parentId: string | null): TranscriptEvent {
  const timestamp = new Date(record.at).toISOString();
  const message = toMessage(record);
  if (message) return { type: "message", id, parentId, timestamp, message };
  return {
    type: "custom",
    customType: `daycare.${record.type}`,
    data: record,
    id,
    parentId,
    timestamp,
  };
}

/**
 * Streams a daycare `history.jsonl` as sessions and events. Records before the first marker form
 * an implicit first session. Ids are derived from the agent and line, so a rerun matches.
 */
export function* readDaycareHistory(path: string, agentId: string): Generator<DaycareItem> {
  let index = 0;
  let sessionId: string | null = null;
  let parentId: string | null = null;
  for (const line of readJsonLines(path)) {
    if ("error" in line) {
      yield { kind: "problem", line: line.line, reason: line.error };
      continue;
    }
    const record = line.value;
    const reason = isRecord(record) ? invalid(record) : "not a JSON object";
    if (reason) {
      yield { kind: "problem", line: line.line, reason };
      continue;
    }
    const valid = record as HistoryRecord;
    const marker = valid.type === "start" || valid.type === "reset";
    if (marker || sessionId === null) {
      index++;
      sessionId = daycareSessionId(agentId, index);
      parentId = null;
      const resetMessage =
        valid.type === "reset" && typeof valid.message === "string" ? valid.message : null;
      const resetReason = marker ? (valid.type as "start" | "reset") : null;
      yield {
        kind: "session",
        line: line.line,
        session: { sessionId, index, startedAt: valid.at, resetReason, resetMessage },
      };
      if (marker) continue;
    }
    const event = toEvent(valid, eventId(agentId, line.line), parentId);
    parentId = event.id;
    yield { kind: "event", line: line.line, sessionId, event };
  }
}
