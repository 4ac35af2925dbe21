import type { Style } from "./style.js";
import { clean } from "./style.js";

/** One event's rendering: a head line (with an optional inline summary) and indented body lines. */
export interface Block {
  /** user, assistant, tool, bash, system, or a message role the renderer does not know. */
  speaker: string;
  /** Text on the head line, flattened and cut to the width that is left (whole with `full`). */
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
  /** Show every text whole (`--full`) instead of cut to the width. */
  full: boolean;
  /** `text` cut to `max` characters, ending in "…", unless `full`; each cut is counted. */
  fit(text: string, max: number): string;
  /** Counts a cut made some other way (output lines left out). */
  markCut(): void;
}

/** Text of a field, cleaned of escape sequences and control characters; "" when not a string. */
export function field(record: Record<string, unknown>, key: string): string {
  const value = record[key];
  return typeof value === "string" ? clean(value) : "";
}

/** Compact JSON of a value, cleaned for the screen; "" for undefined. */
export function compactJson(value: unknown): string {
  if (value === undefined) return "";
  return clean(JSON.stringify(value) ?? "");
}
