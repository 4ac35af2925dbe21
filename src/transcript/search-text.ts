import type { TranscriptEvent } from "./event.js";
import { isRecord } from "./record.js";

/** Block types whose `text` a person would search for; `thinking` is private reasoning. */
const TEXT_BLOCK_TYPES = new Set(["text", "output_text"]);
/** Tool calls are indexed by tool name only: their arguments are mostly paths and JSON noise. */
const TOOL_CALL_BLOCK_TYPES = new Set(["toolCall", "tool_use"]);

function blockText(block: unknown): string | undefined {
  if (!isRecord(block) || typeof block.type !== "string") return undefined;
  if (TEXT_BLOCK_TYPES.has(block.type) && typeof block.text === "string") return block.text;
  if (TOOL_CALL_BLOCK_TYPES.has(block.type) && typeof block.name === "string") return block.name;
  return undefined;
}

function contentPieces(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  const pieces: string[] = [];
  for (const block of content) {
    const text = blockText(block);
    if (text !== undefined) pieces.push(text);
  }
  return pieces;
}

function piecesOf(event: Record<string, unknown>): string[] {
  switch (event.type) {
    case "message":
      return isRecord(event.message) ? contentPieces(event.message.content) : [];
    case "compaction":
    case "branch_summary":
      return typeof event.summary === "string" ? [event.summary] : [];
    case "custom_message":
      return typeof event.content === "string" ? [event.content] : [];
    default:
      return [];
  }
}

/**
 * The text full-text search indexes for one event; "" when it has none. Accepts any shape,
 * because it runs on every append and on imported legacy lines, and a malformed record must not
 * stop either.
 */
export function searchableText(event: TranscriptEvent): string {
  const record: unknown = event;
  if (!isRecord(record)) return "";
  return piecesOf(record)
    .filter((piece) => piece !== "")
    .join("\n");
}
