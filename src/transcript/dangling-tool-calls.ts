import { isMessageEvent, type TranscriptEvent } from "./event.js";
import { isRecord } from "./record.js";
import { TranscriptTree } from "./tree.js";

/** A tool call the assistant made on a branch that has no result after it. */
export interface DanglingToolCall {
  /** The assistant message event that made the call. */
  eventId: string;
  toolCallId: string;
  name: string | null;
  arguments: unknown;
}

/** Call blocks in the pi format (`toolCall`) and the Anthropic one (`tool_use`). */
function callsOf(event: TranscriptEvent): DanglingToolCall[] {
  if (!isMessageEvent(event) || event.message.role !== "assistant") return [];
  const content = event.message.content;
  if (!Array.isArray(content)) return [];
  return content.flatMap((block) => {
    if (!isRecord(block) || typeof block.id !== "string") return [];
    if (block.type !== "toolCall" && block.type !== "tool_use") return [];
    return [
      {
        eventId: event.id,
        toolCallId: block.id,
        name: typeof block.name === "string" ? block.name : null,
        arguments: block.type === "tool_use" ? block.input : block.arguments,
      },
    ];
  });
}

/** Ids answered by a message: a `toolResult` message, or `tool_result` blocks in its content. */
function answeredBy(event: TranscriptEvent): string[] {
  if (!isMessageEvent(event)) return [];
  const { message } = event;
  if (message.role === "toolResult" && typeof message.toolCallId === "string") {
    return [message.toolCallId];
  }
  if (!Array.isArray(message.content)) return [];
  return message.content.flatMap((block) =>
    isRecord(block) && block.type === "tool_result" && typeof block.tool_use_id === "string"
      ? [block.tool_use_id]
      : [],
  );
}

/**
 * The tool calls on the branch ending at `leafId` (root first) that no later event on that branch
 * answers: what a turn killed between calling a tool and recording its result left behind. The
 * tool may or may not have run; only the caller can tell whether running it again is safe.
 */
export function danglingToolCalls(
  events: readonly TranscriptEvent[],
  leafId: string | null,
): DanglingToolCall[] {
  if (leafId === null) return [];
  const tree = TranscriptTree.from(events);
  if (!tree.has(leafId)) return [];
  const byId = new Map(events.map((event) => [event.id, event]));
  const open = new Map<string, DanglingToolCall>();
  for (const id of tree.pathTo(leafId)) {
    const event = byId.get(id);
    if (event === undefined) continue;
    for (const answered of answeredBy(event)) open.delete(answered);
    for (const call of callsOf(event)) open.set(call.toolCallId, call);
  }
  return [...open.values()];
}
