import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TranscriptEvent } from "./event.js";
import { searchableText, TOOL_ARGUMENTS_CAP } from "./search-text.js";

const at = { id: "a", parentId: null, timestamp: "2026-01-31T07:26:10.958Z" };
const message = (message: unknown): TranscriptEvent => ({ type: "message", ...at, message });

describe("searchableText", () => {
  it("indexes an assistant's text, tool names and argument values, not its thinking", () => {
    const event = message({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "secret plan", thinkingSignature: "sig" },
        { type: "text", text: "Let me check" },
        { type: "toolCall", id: "call_1|fc_2", name: "apple-calendar-list", arguments: { d: 1 } },
        { type: "tool_use", id: "toolu_1", name: "read", input: { path: "/x" } },
        { type: "output_text", text: "mirrored" },
      ],
    });
    expect(searchableText(event)).toBe("Let me check\napple-calendar-list 1\nread /x\nmirrored");
  });

  it("walks argument values in order, skipping keys, booleans and nulls", () => {
    const event = message({
      role: "assistant",
      content: [
        {
          type: "toolCall",
          name: "exec",
          arguments: { command: "grep -rn foo", opts: { cwd: "/srv", flags: [true, null, 3.5] } },
        },
        { type: "tool_use", input: "raw string input" },
        { type: "tool_use", name: "noop", input: {} },
      ],
    });
    expect(searchableText(event)).toBe("exec grep -rn foo /srv 3.5\nraw string input\nnoop");
  });

  it("caps the argument text of one call", () => {
    const long = "x".repeat(1500);
    const args = { a: long, b: long, c: "🌿".repeat(3000), d: "after the cap" };
    const text = searchableText(
      message({
        role: "assistant",
        content: [{ type: "toolCall", name: "write", arguments: args }],
      }),
    );
    expect(text.startsWith(`write ${long} x`)).toBe(true);
    expect(text.length).toBeLessThanOrEqual("write ".length + TOOL_ARGUMENTS_CAP);
    expect(text).not.toContain("after the cap");
    const call = (value: string) =>
      searchableText(
        message({
          role: "assistant",
          content: [{ type: "toolCall", name: "w", arguments: [value] }],
        }),
      );
    expect(call("🌿".repeat(1500))).toBe(`w ${"🌿".repeat(TOOL_ARGUMENTS_CAP / 2)}`);
    // A cut never leaves half of a surrogate pair behind.
    const odd = call(`${"a".repeat(TOOL_ARGUMENTS_CAP - 1)}🌿`);
    expect(odd).toBe(`w ${"a".repeat(TOOL_ARGUMENTS_CAP - 1)}`);
  });

  it("indexes the error message of a failed turn", () => {
    const event = message({ role: "assistant", content: [], errorMessage: "Connection error." });
    expect(searchableText(event)).toBe("Connection error.");
    expect(searchableText(message({ role: "assistant", content: "ok", errorMessage: 5 }))).toBe(
      "ok",
    );
  });

  it("indexes tool results by their text, without prefixing the tool name", () => {
    const event = message({
      role: "toolResult",
      toolName: "exec",
      content: [
        { type: "text", text: "Meeting at 2pm" },
        { type: "image", data: "iVBOR", mimeType: "image/png" },
      ],
    });
    expect(searchableText(event)).toBe("Meeting at 2pm");
  });

  it("accepts plain-string content", () => {
    expect(searchableText(message({ role: "user", content: "héllo" }))).toBe("héllo");
  });

  it("indexes summaries and custom messages, and nothing else", () => {
    expect(searchableText({ type: "compaction", ...at, summary: "## Goal" })).toBe("## Goal");
    expect(searchableText({ type: "branch_summary", ...at, summary: "left" })).toBe("left");
    expect(searchableText({ type: "custom_message", ...at, content: "yield" })).toBe("yield");
    expect(searchableText({ type: "custom_message", ...at, content: ["x"] })).toBe("");
    expect(searchableText({ type: "model_change", ...at, provider: "p" })).toBe("");
    expect(searchableText({ type: "session", ...at, cwd: "/w" })).toBe("");
  });

  it("returns an empty string for odd shapes", () => {
    for (const odd of [null, 3, "x", [], { role: "user" }, { content: null }, { content: {} }]) {
      expect(searchableText(message(odd))).toBe("");
    }
    expect(
      searchableText(message({ content: [null, 1, "s", [], { type: "text", text: 5 }] })),
    ).toBe("");
  });

  it("never throws, whatever it is given", () => {
    const block = fc.oneof(
      fc.anything(),
      fc.record({ type: fc.constantFrom("text", "toolCall", "thinking"), text: fc.anything() }),
    );
    const payload = fc.record(
      { role: fc.anything(), content: fc.oneof(fc.anything(), fc.array(block)) },
      { requiredKeys: [] },
    );
    const eventArb = fc.oneof(
      fc.anything(),
      fc.record({
        type: fc.constantFrom("message", "compaction", "branch_summary", "custom_message", "x"),
        message: fc.oneof(fc.anything(), payload),
        summary: fc.anything(),
        content: fc.anything(),
      }),
    );
    fc.assert(
      fc.property(eventArb, (event) => {
        expect(typeof searchableText(event as TranscriptEvent)).toBe("string");
      }),
    );
  });
});
