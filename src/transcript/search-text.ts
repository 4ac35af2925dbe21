import type { TranscriptEvent } from "./event.js";
import { isRecord } from "./record.js";

/** Block types whose `text` a person would search for; `thinking` is private reasoning. */
const TEXT_BLOCK_TYPES = new Set(["text", "output_text"]);
/**
 * Tool calls are indexed by tool name and the values they were given (`grep -rn foo` in a shell
 * call), not the argument keys, which are the same in every call of a tool.
 */
const TOOL_CALL_BLOCK_TYPES = new Set(["toolCall", "tool_use"]);
/** A call can carry a whole file to write: the first 2 KB of its values are what people search. */
export const TOOL_ARGUMENTS_CAP = 2048;

function blockText(block: unknown): string | undefined {
  if (!isRecord(block) || typeof block.type !== "string") return undefined;
  if (TEXT_BLOCK_TYPES.has(block.type) && typeof block.text === "string") return block.text;
  if (!TOOL_CALL_BLOCK_TYPES.has(block.type)) return undefined;
  const name = typeof block.name === "string" ? [block.name] : [];
  const values = argumentValues(block.type === "tool_use" ? block.input : block.arguments);
  const text = [...name, values].filter((piece) => piece !== "").join(" ");
  return text === "" ? undefined : text;
}

/** String and number values of a tool call's arguments, depth first, up to the cap. */
function argumentValues(args: unknown): string {
  const values: string[] = [];
  let length = 0;
  const stack: unknown[] = [args];
  while (stack.length > 0 && length < TOOL_ARGUMENTS_CAP) {
    const value = stack.pop();
    if (typeof value === "string" || (typeof value === "number" && Number.isFinite(value))) {
      const text = String(value);
      values.push(text);
      length += text.length + 1;
    } else if (Array.isArray(value) || isRecord(value)) {
      const children = Object.values(value);
      for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]);
    }
  }
  const joined = values.join(" ");
  return joined.length <= TOOL_ARGUMENTS_CAP ? joined : cutAt(joined, TOOL_ARGUMENTS_CAP);
}

/** `text` cut to `length` code units, never between the two halves of a surrogate pair. */
function cutAt(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
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

/** A failed assistant turn has no content, only the provider's `errorMessage`. */
function messagePieces(message: Record<string, unknown>): string[] {
  const pieces = contentPieces(message.content);
  if (typeof message.errorMessage === "string") pieces.push(message.errorMessage);
  return pieces;
}

function piecesOf(event: Record<string, unknown>): string[] {
  switch (event.type) {
    case "message":
      return isRecord(event.message) ? messagePieces(event.message) : [];
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
