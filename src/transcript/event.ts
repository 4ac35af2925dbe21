import { isRecord } from "./record.js";

/**
 * One transcript line in the legacy record shape. Unknown keys are kept verbatim (and in their
 * original order) so a JSONL export is byte-faithful. `timestamp` is typed as a string because
 * every observed line has one, but the parser does not invent it when a line lacks it.
 */
export interface TranscriptEvent {
  type: string;
  id: string;
  /** Absent and `null` both mean "no parent"; export must keep whichever the source had. */
  parentId?: string | null;
  timestamp: string;
  [key: string]: unknown;
}

/** The `message` object of a `type: "message"` event. */
export interface MessagePayload {
  role: string;
  content?: unknown;
  [key: string]: unknown;
}

export interface MessageEvent extends TranscriptEvent {
  type: "message";
  message: MessagePayload;
}

export interface CompactionEvent extends TranscriptEvent {
  type: "compaction";
  summary: string;
  firstKeptEntryId?: string;
  tokensBefore?: number;
}

/** Types the legacy runtime writes; anything else is still stored and exported unchanged. */
export const KNOWN_EVENT_TYPES = [
  "session",
  "message",
  "compaction",
  "branch_summary",
  "model_change",
  "thinking_level_change",
  "custom",
  "custom_message",
  "label",
  "session_info",
] as const;

export type KnownEventType = (typeof KNOWN_EVENT_TYPES)[number];

const KNOWN = new Set<string>(KNOWN_EVENT_TYPES);

export function isKnownEventType(type: string): type is KnownEventType {
  return KNOWN.has(type);
}

/** The first line of a file: `type: "session"`, its `id` is the session id, it has no parent. */
export function isSessionHeader(event: TranscriptEvent): boolean {
  return event.type === "session";
}

export function isMessageEvent(event: TranscriptEvent): event is MessageEvent {
  return (
    event.type === "message" && isRecord(event.message) && typeof event.message.role === "string"
  );
}

export function isCompactionEvent(event: TranscriptEvent): event is CompactionEvent {
  return (
    event.type === "compaction" &&
    typeof event.summary === "string" &&
    (event.firstKeptEntryId === undefined || typeof event.firstKeptEntryId === "string") &&
    (event.tokensBefore === undefined || typeof event.tokensBefore === "number")
  );
}

/**
 * Whether the record carries a `parentId` key at all. Injected slash-command replies have none,
 * roots have `null`; both occur in real files and an export must reproduce which one it was.
 */
export function hasParentKey(event: TranscriptEvent): boolean {
  return Object.hasOwn(event, "parentId");
}

/** The parent id, or null when it is absent, null, or not a string. */
export function parentIdOf(event: Pick<TranscriptEvent, "parentId">): string | null {
  return typeof event.parentId === "string" ? event.parentId : null;
}
