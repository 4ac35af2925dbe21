import type { Style } from "./style.js";
import { sanitize } from "./style.js";

/** One event's rendering: a head line (with an optional inline summary) and indented body lines. */
export interface Block {
  /** user, assistant, tool, system, or a message role the renderer does not know. */
  speaker: string;
  /** Text on the head line, flattened and cut to the width that is left. */
  inline?: string;
  /** Already styled; indented under the head. */
  body?: string[];
  /** Housekeeping events (model changes …) are shown dim, so the conversation stands out. */
  quiet?: boolean;
  /** Style of the inline text (the speaker keeps its own). */
  tone?: (text: string) => string;
}

export interface RenderContext {
  style: Style;
  /** Columns left for an indented body line. */
  width: number;
}

/** Text of a field, cleaned of control characters; "" when it is not a string. */
export function field(record: Record<string, unknown>, key: string): string {
  const value = record[key];
  return typeof value === "string" ? sanitize(value) : "";
}
