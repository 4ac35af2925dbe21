import { StateError } from "./db/errors.js";

/**
 * The one validator of the ids agentstate keys rows by: agent ids, session ids, event ids. Every
 * layer (stores, worker, server, doctor, backup) checks an id here, so an id one of them accepts
 * is never refused by another further down, nor stored as something else.
 */

export const MAX_AGENT_ID_LENGTH = 64;
export const MAX_ID_LENGTH = 200;
// Letters, digits, `_`, `-`, `.`; starting with a letter, digit or `_`. An agent id becomes a
// directory name, so separators, `..` and control characters can never appear.
const AGENT_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
// A session id names an exported file (`<id>.jsonl`): "." and ".." would name a directory.
const DOT_NAMES = new Set([".", ".."]);

function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

// "session id" → "sessionId": the details key that names the id.
function keyOf(kind: string): string {
  return kind.replace(/ (\w)/, (_, c: string) => c.toUpperCase());
}

function refuse(kind: string, message: string, id: unknown, extra = {}): StateError {
  return new StateError("E_INVALID_ID", message, { details: { [keyOf(kind)]: id, ...extra } });
}

/** The index of the first UTF-16 code unit that is half of no pair, or -1. */
export function loneSurrogateAt(value: string): number {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0xd800 || code > 0xdfff) continue;
    const next = value.charCodeAt(i + 1);
    if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
    else return i;
  }
  return -1;
}

/**
 * A lone surrogate cannot be stored as UTF-8: SQLite would keep U+FFFD instead, so the row would
 * answer to another id and a later insert that refers to it fails as a bare FOREIGN KEY error.
 */
function refuseLoneSurrogate(kind: string, id: string): void {
  const position = loneSurrogateAt(id);
  if (position === -1) return;
  const unit = id.charCodeAt(position).toString(16).toUpperCase();
  throw refuse(
    kind,
    `${kind} ${shown(id)} has a lone surrogate (U+${unit}) at position ${position}: not well-formed text`,
    id,
    { position },
  );
}

/** Returns `agentId` when it is safe as a directory name, else throws `E_INVALID_ID`. */
export function validateAgentId(agentId: unknown): string {
  if (typeof agentId !== "string") {
    throw new StateError("E_INVALID_ID", `agent id must be a string, got ${typeof agentId}`);
  }
  if (agentId.length === 0 || agentId.length > MAX_AGENT_ID_LENGTH) {
    throw refuse(
      "agent id",
      `agent id ${shown(agentId)} must be 1 to ${MAX_AGENT_ID_LENGTH} characters`,
      agentId,
    );
  }
  refuseLoneSurrogate("agent id", agentId);
  if (!AGENT_ID.test(agentId) || agentId.includes("..")) {
    throw refuse(
      "agent id",
      `agent id ${shown(agentId)} may use only letters, digits, "_", "-" and "." (no path separators, no "..")`,
      agentId,
    );
  }
  return agentId;
}

// Ids travel in URLs, file names of exports and log lines: no control characters.
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * An id that is 1 to `max` printable, well-formed characters (`kind` names it in the error, e.g.
 * "run id"); `where` adds context such as the session.
 */
export function checkPrintableId(
  kind: string,
  value: unknown,
  where = "",
  max = MAX_ID_LENGTH,
): string {
  if (typeof value !== "string" || value.length === 0 || value.length > max || hasControl(value)) {
    throw refuse(
      kind,
      `${kind} must be 1 to ${max} printable characters${where}, got ${JSON.stringify(value)?.slice(0, 80)}`,
      value,
    );
  }
  refuseLoneSurrogate(kind, value);
  return value;
}

/** Returns `sessionId` when it is 1 to 200 printable, well-formed characters and not "." or "..". */
export function checkSessionId(sessionId: unknown): string {
  if (typeof sessionId === "string" && DOT_NAMES.has(sessionId)) {
    throw refuse(
      "session id",
      `session id ${JSON.stringify(sessionId)} names a directory`,
      sessionId,
    );
  }
  return checkPrintableId("session id", sessionId);
}

/** Returns `eventId` when it is 1 to 200 printable, well-formed characters. */
export function checkEventId(eventId: unknown, sessionId: string): string {
  return checkPrintableId("event id", eventId, ` (session ${sessionId})`);
}
