import { describe, expect, it } from "vitest";
import {
  hasParentKey,
  isCompactionEvent,
  isKnownEventType,
  isMessageEvent,
  isSessionHeader,
  KNOWN_EVENT_TYPES,
  parentIdOf,
  type TranscriptEvent,
} from "./event.js";

const base = { id: "a1", timestamp: "2026-01-31T07:26:10.958Z" };

describe("event guards", () => {
  it("recognises a message only when it has a message object with a string role", () => {
    const ok: TranscriptEvent = {
      type: "message",
      ...base,
      message: { role: "user", content: [] },
    };
    expect(isMessageEvent(ok)).toBe(true);
    expect(isMessageEvent({ type: "message", ...base, message: { content: [] } })).toBe(false);
    expect(isMessageEvent({ type: "message", ...base, message: null })).toBe(false);
    expect(isMessageEvent({ type: "custom_message", ...base, message: { role: "user" } })).toBe(
      false,
    );
  });

  it("recognises a compaction by its summary and checks the optional fields' types", () => {
    const ok = {
      type: "compaction",
      ...base,
      summary: "s",
      firstKeptEntryId: "b",
      tokensBefore: 9,
    };
    expect(isCompactionEvent(ok)).toBe(true);
    expect(isCompactionEvent({ type: "compaction", ...base, summary: "s" })).toBe(true);
    expect(isCompactionEvent({ type: "compaction", ...base })).toBe(false);
    expect(isCompactionEvent({ ...ok, firstKeptEntryId: 3 })).toBe(false);
    expect(isCompactionEvent({ ...ok, tokensBefore: "9" })).toBe(false);
  });

  it("tells an absent parentId from a null one", () => {
    expect(hasParentKey({ type: "message", ...base })).toBe(false);
    expect(hasParentKey({ type: "message", ...base, parentId: null })).toBe(true);
    expect(hasParentKey({ type: "message", ...base, parentId: "p" })).toBe(true);
    expect(parentIdOf({})).toBeNull();
    expect(parentIdOf({ parentId: null })).toBeNull();
    expect(parentIdOf({ parentId: "p" })).toBe("p");
  });

  it("knows the legacy types and the header", () => {
    expect(KNOWN_EVENT_TYPES).toContain("branch_summary");
    expect(isKnownEventType("session_info")).toBe(true);
    expect(isKnownEventType("custom:model-snapshot")).toBe(false);
    const header = { type: "session", version: 3, ...base, cwd: "/home/admin/clawd" };
    expect(isSessionHeader(header)).toBe(true);
    expect(isSessionHeader({ type: "message", ...base })).toBe(false);
  });
});
