import { describe, expect, it } from "vitest";
import type { TranscriptEvent } from "./event.js";
import { indexedText, storedEventText } from "./indexed-text.js";

function message(body: Record<string, unknown>): TranscriptEvent {
  return { type: "message", id: "e1", timestamp: "2025-01-01T00:00:00Z", message: body };
}

describe("indexedText", () => {
  it("is the searchable text with CJK runs cut in bigrams, and empty for an event without text", () => {
    const event = message({ role: "user", content: "雪の日 deploy" });
    expect(indexedText(event)).toContain("deploy");
    expect(indexedText(event)).not.toBe("雪の日 deploy");
    expect(indexedText({ type: "session", id: "s", timestamp: "2025-01-01T00:00:00Z" })).toBe("");
  });

  it("of a stored event is the text of the event it parses to", () => {
    const event = message({
      role: "assistant",
      content: [{ type: "toolCall", name: "bash", arguments: { command: "grep -rn walrus" } }],
    });
    expect(storedEventText(JSON.stringify(event))).toBe(indexedText(event));
  });
});
