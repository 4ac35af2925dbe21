import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../stores/agent/transcript-store.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { renderConversation, renderConversationPage } from "./conversation.js";

// One event per test, rendered alone: the expected text is written by hand from the record.
const TIME = "2026-03-02T08:00:00.000Z";

function stored(...events: TranscriptEvent[]): StoredEvent[] {
  return events.map((event, i) => ({ sessionId: "s1", seq: i + 1, event, createdAt: 0 }));
}

function entry(type: string, fields: Record<string, unknown>): TranscriptEvent {
  return { type, id: "e1", parentId: null, timestamp: TIME, ...fields };
}

function message(body: Record<string, unknown>): TranscriptEvent {
  return entry("message", { message: body });
}

const plain = (event: TranscriptEvent, full = false) =>
  renderConversation(stored(event), { color: false, width: 100, full });

const HEAD = "#1  2026-03-02 08:00:00  ";

describe("bashExecution messages", () => {
  const bash = (fields: Record<string, unknown>) =>
    message({ role: "bashExecution", command: "ls -la", output: "a\nb\n", ...fields });

  it("show the command, its output and its exit code", () => {
    expect(plain(bash({ exitCode: 0, cancelled: false, truncated: false }))).toBe(
      `${HEAD}bash       $ ls -la\n    a\n    b\n    [exit 0]`,
    );
  });

  it("say when a command failed, was cancelled, cut when recorded or kept from the model", () => {
    expect(plain(bash({ exitCode: 2 }))).toContain("\n    [exit 2]");
    expect(plain(bash({ cancelled: true }))).toContain("\n    [cancelled]");
    expect(plain(bash({}))).toContain("\n    [exit code unknown]");
    expect(
      plain(
        bash({
          exitCode: 0,
          truncated: true,
          fullOutputPath: "/tmp/pi-bash-1.log",
          excludeFromContext: true,
        }),
      ),
    ).toContain(
      "\n    [exit 0, output truncated when recorded; whole output was in /tmp/pi-bash-1.log, not sent to the model]",
    );
  });

  it("show the first 12 output lines, and every line with --full", () => {
    const output = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n");
    const cut = renderConversationPage(stored(bash({ output, exitCode: 0 })), { color: false });
    expect(cut.text).toContain("    line 12\n    … 8 more lines\n    [exit 0]");
    expect(cut.text).not.toContain("line 13");
    expect(cut.cuts).toBe(1);
    const whole = renderConversationPage(stored(bash({ output, exitCode: 0 })), {
      color: false,
      full: true,
    });
    expect(whole.text).toContain("    line 20\n    [exit 0]");
    expect(whole.cuts).toBe(0);
  });

  it("strip color codes from the output and expand tabs", () => {
    const output = "\u001b[01;34mdir\u001b[0m\tfile\r\nnext";
    expect(plain(bash({ output, exitCode: 0 }))).toContain("    dir     file\n    next\n");
  });
});

describe("housekeeping records", () => {
  it("session_info shows the session's name, one line whatever it holds", () => {
    expect(plain(entry("session_info", { name: "Fix\tthe\nbuild \u001b[31mnow\u001b[0m" }))).toBe(
      `${HEAD}system     session named "Fix the build now"`,
    );
    expect(plain(entry("session_info", {}))).toBe(`${HEAD}system     session name cleared`);
  });

  it("label shows its target and text on one line", () => {
    expect(plain(entry("label", { targetId: "a1b2c3d4", label: "good\tpoint\nhere" }))).toBe(
      `${HEAD}system     label a1b2c3d4 → "good point here"`,
    );
    expect(plain(entry("label", { targetId: "a1b2c3d4" }))).toBe(
      `${HEAD}system     label a1b2c3d4 → (cleared)`,
    );
  });

  it("custom shows its data as compact JSON", () => {
    const event = entry("custom", {
      customType: "daycare.rlm_complete",
      data: { isError: true, error: "boom" },
    });
    expect(plain(event)).toBe(
      `${HEAD}system     [custom daycare.rlm_complete] {"isError":true,"error":"boom"}`,
    );
  });

  it("branch_summary names the branch it came from and shows the summary", () => {
    const event = entry("branch_summary", { fromId: "f00d", summary: "Tried A.\n\nB works." });
    expect(plain(event)).toBe(
      `${HEAD}system\n    ══ branch summary (from f00d) ══\n    Tried A.\n\n    B works.`,
    );
  });

  it("compaction counts the files the summarised turns read and changed", () => {
    const event = entry("compaction", {
      summary: "Done.",
      tokensBefore: 10,
      details: { readFiles: ["a", "b"], modifiedFiles: ["c"] },
    });
    expect(plain(event)).toContain("    Done.\n    (files read: 2, modified: 1)");
  });

  it("custom_message shows block content and whether the user saw it", () => {
    const event = entry("custom_message", {
      customType: "openclaw.sessions_yield",
      content: [{ type: "text", text: "yielded to\tworker" }],
      display: false,
    });
    expect(plain(event)).toBe(
      `${HEAD}system     [openclaw.sessions_yield] (not shown to the user)\n    yielded to      worker`,
    );
  });

  it("an unknown record shows its own fields", () => {
    expect(plain(entry("note", { text: "hi" }))).toBe(`${HEAD}system     [note] {"text":"hi"}`);
  });
});

describe("tool calls and results", () => {
  const call = message({
    role: "assistant",
    content: [
      {
        type: "toolCall",
        id: "t1",
        name: "write",
        arguments: { path: "a.txt", text: "x".repeat(200) },
      },
    ],
  });

  it("cut arguments end with … and --full shows them whole", () => {
    const cut = renderConversationPage(stored(call), { color: false, width: 60 });
    // 60 columns less the 4 of the indent: 55 characters and the "…".
    expect(cut.text).toBe(`${HEAD}assistant\n    → write(path="a.txt", text="${"x".repeat(27)}…`);
    expect(cut.cuts).toBe(1);
    const whole = renderConversation(stored(call), { color: false, width: 60, full: true });
    expect(whole).toBe(`${HEAD}assistant\n    → write(path="a.txt", text="${"x".repeat(200)}")`);
  });

  it("a long result is one cut line, and whole under its head with --full", () => {
    const result = message({
      role: "toolResult",
      toolName: "exec",
      content: [{ type: "text", text: "\u001b[32mok\u001b[0m\nsecond line" }],
      isError: false,
    });
    expect(plain(result)).toBe(`${HEAD}tool       ← exec: ok second line`);
    expect(plain(result, true)).toBe(`${HEAD}tool       ← exec:\n    ok\n    second line`);
  });

  it("leading and trailing blank lines of a text are dropped", () => {
    const text = message({ role: "assistant", content: [{ type: "text", text: "\n\nHello\n\n" }] });
    expect(plain(text)).toBe(`${HEAD}assistant\n    Hello`);
  });
});
