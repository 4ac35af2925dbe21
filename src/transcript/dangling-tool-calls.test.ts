import { describe, expect, it } from "vitest";
import { danglingToolCalls } from "./dangling-tool-calls.js";
import type { TranscriptEvent } from "./event.js";

function message(id: string, parentId: string | null, role: string, content: unknown, extra = {}) {
  return {
    type: "message",
    id,
    parentId,
    timestamp: "2026-01-01T00:00:00.000Z",
    message: { role, content, ...extra },
  } as TranscriptEvent;
}

const call = (id: string) => ({ type: "toolCall", id, name: "read", arguments: { path: id } });

describe("danglingToolCalls", () => {
  it("reports calls without a result on the branch to the leaf, not on other branches", () => {
    const events = [
      { type: "session", id: "s", timestamp: "2026-01-01T00:00:00.000Z" } as TranscriptEvent,
      message("u1", null, "user", "go"),
      message("a1", "u1", "assistant", [call("c1"), call("c2")]),
      message("r1", "a1", "toolResult", [], { toolCallId: "c1" }),
      // A branch left behind: its call is not on the current path.
      message("a2", "u1", "assistant", [call("c3")]),
    ];
    expect(danglingToolCalls(events, "r1")).toEqual([
      { eventId: "a1", toolCallId: "c2", name: "read", arguments: { path: "c2" } },
    ]);
    expect(danglingToolCalls(events, "a2").map((c) => c.toolCallId)).toEqual(["c3"]);
    expect(danglingToolCalls(events, null)).toEqual([]);
  });

  it("understands tool_use blocks answered by tool_result blocks", () => {
    const events = [
      message("a1", null, "assistant", [
        { type: "tool_use", id: "t1", name: "bash", input: { cmd: "ls" } },
        { type: "tool_use", id: "t2", name: "bash", input: { cmd: "pwd" } },
      ]),
      message("u1", "a1", "user", [{ type: "tool_result", tool_use_id: "t1", content: "x" }]),
    ];
    expect(danglingToolCalls(events, "u1")).toEqual([
      { eventId: "a1", toolCallId: "t2", name: "bash", arguments: { cmd: "pwd" } },
    ]);
  });
});
