/** Lines of a legacy (version 3) transcript, for tests that write legacy homes by hand. */

/** The session header line of `sessionId`'s transcript. */
export function headerLine(sessionId: string): string {
  return JSON.stringify({
    type: "session",
    version: 3,
    id: sessionId,
    timestamp: "2026-03-01T00:00:00.000Z",
    cwd: "/w",
  });
}

/** A user message line. */
export function messageLine(id: string, parentId: string | null, text: string): string {
  return JSON.stringify({
    type: "message",
    id,
    parentId,
    timestamp: "2026-03-01T00:00:00.000Z",
    message: { role: "user", content: [{ type: "text", text }] },
  });
}
