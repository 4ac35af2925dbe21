import type { FileEntry, SessionHeader } from "@mariozechner/pi-coding-agent";
import type { JsonValue } from "../stores/json.js";

/**
 * A first user message or a name longer than this is kept by its entry id and read when a list
 * asks for it: the summary stays a small kv value whatever the session holds.
 */
const MAX_INLINE_TEXT = 4096;

/**
 * What `list` needs of a session without reading its entries: pi's `SessionInfo` fields, kept
 * current in the transaction of every append (pi's file mode reads every file to list them).
 */
export interface SessionSummary {
  [key: string]: JsonValue | undefined;
  cwd: string;
  created: string;
  parentSession?: string;
  name?: string;
  nameId?: string;
  /** Unix ms of the last user or assistant message, as pi's `modified` counts it. */
  lastActivity?: number;
  messageCount: number;
  firstMessage?: string;
  firstMessageId?: string;
}

type Message = { role?: unknown; content?: unknown; timestamp?: unknown };

/** The text pi's list shows for a message, or undefined when it counts no text for it. */
export function messageText(message: Message): string | undefined {
  if (typeof message.role !== "string" || !("content" in message)) return undefined;
  if (message.role !== "user" && message.role !== "assistant") return undefined;
  const content = message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .filter((block) => block?.type === "text")
    .map((block) => block.text)
    .join(" ");
}

export function emptySummary(header: SessionHeader | null): SessionSummary {
  const summary: SessionSummary = {
    cwd: typeof header?.cwd === "string" ? header.cwd : "",
    created: header?.timestamp ?? "",
    messageCount: 0,
  };
  if (typeof header?.parentSession === "string") summary.parentSession = header.parentSession;
  return summary;
}

/** Folds one entry into the summary the way pi's `buildSessionInfo` reads a file. */
export function addToSummary(summary: SessionSummary, entry: FileEntry): void {
  if (entry.type === "session_info") {
    const name = typeof entry.name === "string" ? entry.name.trim() : "";
    delete summary.name;
    delete summary.nameId;
    if (name.length > MAX_INLINE_TEXT) summary.nameId = entry.id;
    else if (name !== "") summary.name = name;
  }
  if (entry.type !== "message") return;
  summary.messageCount++;
  const message = entry.message as Message;
  const text = messageText(message);
  if (text === undefined) return;
  const at =
    typeof message.timestamp === "number" ? message.timestamp : Date.parse(entry.timestamp);
  if (!Number.isNaN(at)) summary.lastActivity = Math.max(summary.lastActivity ?? 0, at);
  if (text === "" || message.role !== "user") return;
  if (summary.firstMessage !== undefined || summary.firstMessageId !== undefined) return;
  if (text.length <= MAX_INLINE_TEXT) summary.firstMessage = text;
  else summary.firstMessageId = entry.id;
}

export function summarize(entries: readonly FileEntry[]): SessionSummary {
  const header = entries.find((e): e is SessionHeader => e.type === "session") ?? null;
  const summary = emptySummary(header);
  for (const entry of entries) addToSummary(summary, entry);
  return summary;
}
