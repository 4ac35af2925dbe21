import type { ContextEntry } from "../../transcript/context.js";
import { isRecord } from "../../transcript/record.js";

/** A chat-completions message (the subset this backend sends). */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** The text of a message's content: a string, or its text blocks joined. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .flatMap((block) => (isRecord(block) && typeof block.text === "string" ? [block.text] : []))
    .join("");
}

function toolCallsOf(content: unknown): ChatToolCall[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((block) =>
    isRecord(block) && block.type === "toolCall" && typeof block.id === "string"
      ? [
          {
            id: block.id,
            type: "function" as const,
            function: {
              name: String(block.name),
              arguments: JSON.stringify(block.arguments ?? {}),
            },
          },
        ]
      : [],
  );
}

function toChat(entry: ContextEntry): ChatMessage | null {
  const { event } = entry;
  if (entry.kind === "summary") {
    return {
      role: "user",
      content: `[Summary of the conversation so far]\n${String(event.summary ?? "")}`,
    };
  }
  const message = isRecord(event.message) ? event.message : {};
  if (entry.role === "user" || entry.role === "custom") {
    return {
      role: "user",
      content: textOf(entry.role === "custom" ? event.content : message.content),
    };
  }
  if (entry.role === "assistant") {
    const calls = toolCallsOf(message.content);
    const text = textOf(message.content);
    return calls.length > 0
      ? { role: "assistant", content: text === "" ? null : text, tool_calls: calls }
      : { role: "assistant", content: text };
  }
  if (entry.role === "toolResult" && typeof message.toolCallId === "string") {
    return { role: "tool", tool_call_id: message.toolCallId, content: textOf(message.content) };
  }
  return null;
}

/** The session's context as chat-completions messages, after an optional system prompt. */
export function toChatMessages(
  context: readonly ContextEntry[],
  systemPrompt?: string,
): ChatMessage[] {
  const messages: ChatMessage[] = systemPrompt ? [{ role: "system", content: systemPrompt }] : [];
  for (const entry of context) {
    const message = toChat(entry);
    if (message !== null) messages.push(message);
  }
  return messages;
}
