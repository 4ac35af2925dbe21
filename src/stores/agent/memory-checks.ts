import { StateError } from "../../db/errors.js";

const LONE_SURROGATE = /\p{Surrogate}/u;

/** Free text that may be empty (summaries, values): a string of at most `max` characters. */
export function checkBody(what: string, value: unknown, max: number): string {
  if (typeof value !== "string" || value.length > max || LONE_SURROGATE.test(value)) {
    const got = typeof value === "string" ? `${value.length} characters` : typeof value;
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} must be well-formed text of at most ${max} characters, got ${got}`,
    );
  }
  return value;
}

/** A list of short non-empty lines (open loops). */
export function checkLines(what: string, value: unknown, maxItems: number, max: number): string[] {
  if (!Array.isArray(value) || value.length > maxItems) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} must be an array of at most ${maxItems} strings`,
    );
  }
  return value.map((line, i) => {
    const text = checkBody(`${what}[${i}]`, line, max);
    if (text.trim() === "") {
      throw new StateError("E_INVALID_ARGUMENT", `${what}[${i}] must not be blank`);
    }
    return text;
  });
}

/** A score or confidence: a finite number from 0 to 1. */
export function checkUnit(what: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} must be a number from 0 to 1, got ${String(value)}`,
    );
  }
  return value;
}

/** E_NOT_FOUND naming the missing row, e.g. `notFound("topic t1", { topicId })`. */
export function notFound(what: string, details: Record<string, unknown>): StateError {
  return new StateError("E_NOT_FOUND", `no ${what}`, { details });
}

/** How many compactions back a session still continues its predecessors' topics. */
export const MAX_COMPACTION_DEPTH = 16;

/**
 * A CTE `lineage(session_id, depth)`: the session `@session` (depth 0) and the sessions it
 * continues through compaction, nearest first. Compaction starts a new session row, but the work
 * goes on: its topics and active topic carry over. A reset (or any other reason) starts afresh.
 */
export const COMPACTION_LINEAGE = `WITH RECURSIVE lineage(session_id, depth) AS (
  SELECT @session, 0
  UNION ALL
  SELECT s.predecessor_id, l.depth + 1 FROM lineage l JOIN sessions s ON s.session_id = l.session_id
  WHERE s.reset_reason = 'compaction' AND s.predecessor_id IS NOT NULL AND l.depth < ${MAX_COMPACTION_DEPTH}
)`;
