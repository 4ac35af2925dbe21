import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../stores/agent/transcript-store.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { renderConversation } from "./conversation.js";

// Shaped like examples/legacy-home/agents/main/sessions/5d1c0a3e-….jsonl.
const SESSION = "5d1c0a3e-8f2b-4c71-9a0e-2b7d6f4e1a90";
const usage = { input: 1834, output: 212, totalTokens: 2046 };
const lines: TranscriptEvent[] = [
  { type: "session", version: 3, id: SESSION, timestamp: "2026-03-02T08:00:00.000Z", cwd: "/w" },
  {
    type: "model_change",
    id: "a1000001",
    parentId: null,
    timestamp: "2026-03-02T08:00:00.004Z",
    provider: "anthropic",
    modelId: "claude-sonnet-4-5",
  },
  {
    type: "thinking_level_change",
    id: "a1000002",
    parentId: "a1000001",
    timestamp: "2026-03-02T08:00:00.004Z",
    thinkingLevel: "low",
  },
  {
    type: "custom",
    customType: "model-snapshot",
    data: { provider: "anthropic" },
    id: "a1000003",
    parentId: "a1000002",
    timestamp: "2026-03-02T08:00:00.010Z",
  },
  message("a1000004", "a1000003", "2026-03-02T08:00:01.120Z", {
    role: "user",
    content: [
      { type: "text", text: "What's on my calendar tomorrow?\nAlso remind me to water the basil." },
      { type: "image", data: "aGVsbG8=", mimeType: "image/png" },
    ],
  }),
  message("a1000005", "a1000004", "2026-03-02T08:00:04.870Z", {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "Check the calendar first,\nthen set the reminder." },
      { type: "toolCall", id: "toolu_demo_01", name: "calendar_list", arguments: { days: 1 } },
      {
        type: "toolCall",
        id: "toolu_demo_02",
        name: "reminders_add",
        arguments: { text: "Water the basil", due: "2026-03-03T08:00:00Z", note: "x".repeat(300) },
      },
    ],
    usage,
    stopReason: "toolUse",
  }),
  message("a1000006", "a1000005", "2026-03-02T08:00:05.310Z", {
    role: "toolResult",
    toolCallId: "toolu_demo_01",
    toolName: "calendar_list",
    content: [{ type: "text", text: "09:30 Dentist\n14:00 Call with Priya" }],
    isError: false,
  }),
  message("a1000007", "a1000006", "2026-03-02T08:00:06.000Z", {
    role: "toolResult",
    toolCallId: "toolu_demo_02",
    toolName: "reminders_add",
    content: [{ type: "text", text: "reminders service unavailable" }],
    isError: true,
  }),
  message("a1000008", "a1000007", "2026-03-02T08:00:07.000Z", {
    role: "assistant",
    content: [],
    stopReason: "error",
    errorMessage: "fetch failed",
  }),
  {
    type: "compaction",
    id: "a1000009",
    parentId: "a1000008",
    timestamp: "2026-03-03T19:20:00.000Z",
    summary: "## Goal\nKeep the user's week organised.",
    firstKeptEntryId: "a1000004",
    tokensBefore: 9120,
  },
  message("a100000a", "a1000009", "2026-03-04T07:58:01.500Z", {
    role: "user",
    content: [{ type: "text", text: "Did I water the basil yesterday? 🌿" }],
  }),
  message("a100000b", "a1000009", "2026-03-04T07:59:10.000Z", {
    role: "user",
    content: [{ type: "text", text: "And the tomatoes?" }],
  }),
  { type: "future_thing", id: "a100000c", parentId: "a100000b", timestamp: "2026-03-04T08:00:00Z" },
];

function message(
  id: string,
  parentId: string,
  timestamp: string,
  body: Record<string, unknown>,
): TranscriptEvent {
  return { type: "message", id, parentId, timestamp, message: body };
}

const events: StoredEvent[] = lines.map((event, i) => ({
  sessionId: SESSION,
  seq: i + 1,
  event,
  createdAt: Date.parse("2026-03-05T00:00:00Z"),
}));

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escapes is the point
const ANSI = /\u001b\[[0-9;]*m/g;

describe("renderConversation in plain mode", () => {
  const text = renderConversation(events, { color: false, width: 100 });

  it("shows each speaker with its seq and UTC time", () => {
    expect(text).toMatch(/^#5 +2026-03-02 08:00:01 +user$/m);
    expect(text).toMatch(/^#6 +2026-03-02 08:00:04 +assistant$/m);
    expect(text).toContain(
      "    What's on my calendar tomorrow?\n    Also remind me to water the basil.",
    );
    expect(text).toContain("    [image image/png]");
    expect(text).not.toContain("\u001b");
  });

  it("shows housekeeping events as one-liners and unknown types by name", () => {
    expect(text).toMatch(/^#1 .* system +session 5d1c0a3e-.* started in \/w$/m);
    expect(text).toMatch(/^#2 .* system +model → anthropic\/claude-sonnet-4-5$/m);
    expect(text).toMatch(/^#3 .* system +thinking level → low$/m);
    expect(text).toMatch(/^#4 .* system +\[custom model-snapshot\] \{"provider":"anthropic"\}$/m);
    expect(text).toMatch(/^#13 .* system +\[future_thing\]$/m);
  });

  it("shows thinking, tool calls and tool results on one line each, cut to the width", () => {
    expect(text).toContain("    thinking: Check the calendar first, then set the reminder.");
    expect(text).toContain("    → calendar_list(days=1)");
    expect(text).toMatch(
      / {4}→ reminders_add\(text="Water the basil", due="2026-03-03T08:00:00Z", note="x+…$/m,
    );
    expect(text).toMatch(/tool +← calendar_list: 09:30 Dentist 14:00 Call with Priya$/m);
    expect(text).toMatch(/tool +← reminders_add \(error\): reminders service unavailable$/m);
    for (const line of text.split("\n")) {
      if (!line.startsWith("    ## Goal")) expect(Array.from(line).length).toBeLessThanOrEqual(100);
    }
  });

  it("shows an assistant error when the content is empty", () => {
    expect(text).toContain("    ! fetch failed");
  });

  it("marks a compaction with its summary", () => {
    expect(text).toContain("══ compaction (9120 tokens before): earlier messages summarised ══");
    expect(text).toContain("    ## Goal\n    Keep the user's week organised.");
  });

  it("marks an event whose parent is not the event above it as a branch", () => {
    const marks = text.split("\n").filter((line) => line.startsWith("↳"));
    expect(marks).toEqual(["↳ branch from a1000009"]);
    expect(text).toMatch(/↳ branch from a1000009\n#12 /);
  });

  it("does not mark the first event on screen, whatever its parent", () => {
    const page = renderConversation(events.slice(11), { color: false });
    expect(page).not.toContain("↳");
  });

  it("is empty for no events", () => {
    expect(renderConversation([], { color: false })).toBe("");
  });

  it("keeps terminal escapes in transcript text from reaching the screen", () => {
    const hostile = events.slice(0, 1).concat({
      ...events[4],
      event: message("e1", SESSION, "2026-03-02T08:00:01Z", {
        role: "user",
        content: "evil \u001b]0;pwned\u0007 title\r\u001b[2J",
      }),
    } as StoredEvent);
    const out = renderConversation(hostile, { color: false });
    for (const control of ["\u0007", "\u001b", "\r"]) expect(out).not.toContain(control);
    // Escape sequences are removed whole; a lone control character stays visible as U+FFFD.
    expect(out).toContain("    evil  title\ufffd");
    expect(out).not.toContain("pwned");
  });
});

describe("renderConversation in color mode", () => {
  const plain = renderConversation(events, { color: false, width: 80 });
  const colored = renderConversation(events, { color: true, width: 80 });

  it("adds ANSI escapes", () => {
    expect(colored).toMatch(ANSI);
    expect(colored).toContain("\u001b[1m");
  });

  it("dims a housekeeping line whole, without an early reset", () => {
    const line = colored.split("\n").find((l) => l.includes("model → ")) ?? "";
    expect(line.startsWith("\u001b[2m#2")).toBe(true);
    expect(line.endsWith("claude-sonnet-4-5\u001b[22m")).toBe(true);
    expect(line.match(ANSI)).toHaveLength(2);
  });

  it("says the same thing once the escapes are removed", () => {
    expect(colored.replace(ANSI, "")).toBe(plain);
  });
});
