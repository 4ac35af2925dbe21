import { StateError } from "../db/errors.js";
import type { TranscriptEvent } from "./event.js";
import { isRecord } from "./record.js";

/**
 * Legacy transcripts are compact JSON in insertion order with non-ASCII written raw, which is
 * exactly what JSON.stringify produces, so encoding is JSON.stringify and nothing else. The few
 * source spellings it cannot reproduce (`1.0`, `\u00e9`, `\/`, integer-like keys after other
 * keys, duplicate keys) were not found in any real transcript; see jsonl-codec.test.ts.
 */
export function encodeEvent(event: TranscriptEvent): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(event);
  } catch (error) {
    throw new StateError("E_INVALID_ARGUMENT", `event is not JSON-serializable: ${String(error)}`, {
      cause: error,
      details: { id: event.id },
    });
  }
  if (text === undefined) {
    throw new StateError("E_INVALID_ARGUMENT", "event is not JSON-serializable");
  }
  return text;
}

/** One line per event, each ending in "\n" (as the legacy writer appends), so "" for no events. */
export function encodeJsonl(events: Iterable<TranscriptEvent>): string {
  let out = "";
  for (const event of events) out += `${encodeEvent(event)}\n`;
  return out;
}

export type ParsedLine =
  | { ok: true; event: TranscriptEvent; line: number }
  | { ok: false; line: number; error: string; raw: string };

const BOM = "\uFEFF";

function describeJson(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : `a ${typeof value}`;
}

function stringFieldProblem(record: Record<string, unknown>, key: string): string | undefined {
  if (!Object.hasOwn(record, key)) return `missing "${key}"`;
  const value = record[key];
  return typeof value === "string"
    ? undefined
    : `"${key}" must be a string, got ${describeJson(value)}`;
}

/** Why `value` is not a transcript record, or undefined when it is one. */
function recordProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return `expected a JSON object, got ${describeJson(value)}`;
  const problem = stringFieldProblem(value, "type") ?? stringFieldProblem(value, "id");
  if (problem !== undefined) return problem;
  const parent = value.parentId;
  if (parent !== undefined && parent !== null && typeof parent !== "string") {
    return `"parentId" must be a string or null, got ${describeJson(parent)}`;
  }
  return undefined;
}

/**
 * Parses one line (1-based `line`, used in reports). Returns null for a blank line so callers can
 * skip it without counting it as corrupt. Tolerates CRLF and a BOM on line 1, which editors on
 * Windows add, although no real transcript had either.
 */
export function parseJsonlLine(text: string, line: number): ParsedLine | null {
  let body = text.endsWith("\r") ? text.slice(0, -1) : text;
  if (line === 1 && body.startsWith(BOM)) body = body.slice(1);
  if (body.trim() === "") return null;
  const fail = (error: string): ParsedLine => ({ ok: false, line, error, raw: text });
  if (body.startsWith(BOM)) return fail("byte order mark after line 1 (concatenated files?)");
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return fail(`invalid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const problem = recordProblem(value);
  if (problem !== undefined) return fail(problem);
  return { ok: true, event: value as TranscriptEvent, line };
}

/** Parses a whole file; blank lines are dropped, every other line yields one result in order. */
export function parseJsonl(text: string): ParsedLine[] {
  const lines = text.split("\n");
  const results: ParsedLine[] = [];
  for (const [index, raw] of lines.entries()) {
    const parsed = parseJsonlLine(raw, index + 1);
    if (parsed === null) continue;
    const unterminated = index === lines.length - 1;
    if (!parsed.ok && unterminated) {
      // An append-only writer killed mid-line leaves exactly this: say so, it guides the fix.
      parsed.error += " (last line has no trailing newline: the file may be truncated)";
    }
    results.push(parsed);
  }
  return results;
}
