import { StateError } from "../../db/errors.js";

const MAX_ID_LENGTH = 200;
// Ids travel in URLs, file names of exports and log lines: no control characters.
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

function checkId(kind: string, value: unknown, where: string): string {
  if (
    typeof value !== "string" ||
    value.length === 0 ||
    value.length > MAX_ID_LENGTH ||
    hasControl(value)
  ) {
    throw new StateError(
      "E_INVALID_ID",
      `${kind} must be 1 to ${MAX_ID_LENGTH} printable characters${where}, got ${JSON.stringify(value)?.slice(0, 80)}`,
      { details: { [kind.replace(/ (\w)/, (_, c: string) => c.toUpperCase())]: value } },
    );
  }
  return value;
}

// A session id names an exported file (`<id>.jsonl`): "." and ".." would name a directory.
const DOT_NAMES = new Set([".", ".."]);

export function checkSessionId(sessionId: unknown): string {
  if (typeof sessionId === "string" && DOT_NAMES.has(sessionId)) {
    throw new StateError(
      "E_INVALID_ID",
      `session id ${JSON.stringify(sessionId)} names a directory`,
      {
        details: { sessionId },
      },
    );
  }
  return checkId("session id", sessionId, "");
}

export function checkEventId(eventId: unknown, sessionId: string): string {
  return checkId("event id", eventId, ` (session ${sessionId})`);
}
