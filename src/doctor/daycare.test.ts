import { cpSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { CORPUS_DIR } from "../test-support/corpus.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";

const tempDir = useTempDirs();
const SPEC = join(CORPUS_DIR, "daycare-ex3ndr-daycare/spec-derived/final-2026-02-19");
const noBackup = async () => "(test)";

function home(files: Record<string, string>): string {
  const dir = join(tempDir(), "home");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const lines = (...records: object[]) => records.map((r) => `${JSON.stringify(r)}\n`).join("");

describe("doctor: daycare agent directories", () => {
  it("splits history at start/reset markers into sessions, the last one active", async () => {
    const dir = home({
      "agents/a1/descriptor.json": JSON.stringify({
        type: "user",
        connector: "telegram",
        userId: "u",
        channelId: "c",
      }),
      "agents/a1/state.json": JSON.stringify({
        context: { messages: [{ role: "user", content: "x" }] },
        permissions: { workingDir: "/w" },
        state: "active",
        createdAt: 1,
        updatedAt: 2,
      }),
      "agents/a1/history.jsonl": lines(
        { type: "user_message", at: 5, text: "before any marker", files: [] },
        { type: "start", at: 10 },
        { type: "user_message", at: 11, text: "hello", files: [] },
        {
          type: "assistant_message",
          at: 12,
          text: "hi",
          files: [],
          toolCalls: [{ type: "toolCall", id: "t1", name: "search", arguments: { q: "x" } }],
          tokens: null,
        },
        {
          type: "tool_result",
          at: 13,
          toolCallId: "t1",
          output: {
            toolMessage: {
              role: "toolResult",
              toolCallId: "t1",
              toolName: "search",
              content: [{ type: "text", text: "found" }],
              isError: false,
              timestamp: 13,
            },
            typedResult: { n: 1 },
          },
        },
        { type: "reset", at: 20, message: "/new fresh start" },
        { type: "user_message", at: 21, text: "new topic", files: [] },
        { type: "note", at: 22, text: "remember this" },
      ),
    });
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    expect(report.status).toBe("succeeded");
    const agent = openStateHome({ home: dir, create: false }).agent("a1", { create: false });
    const sessions = agent.lifecycle.list("agent:a1:main");
    expect(sessions.map((s) => [s.sessionId, s.resetReason, s.resetMessage, s.endedAt])).toEqual([
      ["a1-session-1", null, null, 10],
      ["a1-session-2", "start", null, 20],
      ["a1-session-3", "reset", "/new fresh start", null],
    ]);
    expect(agent.lifecycle.active("agent:a1:main")?.sessionId).toBe("a1-session-3");
    const second = agent.transcripts.read("a1-session-2").map((e) => e.event);
    expect(second.map((e) => e.type)).toEqual(["session", "message", "message", "message"]);
    expect(second[2]?.message).toMatchObject({
      role: "assistant",
      content: [
        { type: "text", text: "hi" },
        { type: "toolCall", id: "t1" },
      ],
    });
    expect(second[3]?.message).toMatchObject({
      role: "toolResult",
      toolCallId: "t1",
      details: { typedResult: { n: 1 } },
    });
    expect(agent.transcripts.read("a1-session-3").map((e) => e.event.type)).toEqual([
      "session",
      "message",
      "custom",
    ]);
    expect(agent.kv.get("daycare", "state")).toEqual({
      permissions: { workingDir: "/w" },
      state: "active",
      createdAt: 1,
      updatedAt: 2,
    });
    expect(agent.search.search("topic")).toHaveLength(1);
    expect(existsSync(join(dir, "agents/a1/history.jsonl"))).toBe(false);
  });

  it("gives an agent without history one empty active session", async () => {
    const dir = home({
      "agents/b2/descriptor.json": JSON.stringify({ type: "cron", id: "b2", name: "Nightly" }),
    });
    await runDoctorFix({ home: dir, backup: noBackup });
    const agent = openStateHome({ home: dir, create: false }).agent("b2", { create: false });
    expect(agent.lifecycle.active("agent:b2:main")?.sessionId).toBe("b2-session-1");
    expect(agent.kv.get("daycare", "descriptor")).toEqual({
      type: "cron",
      id: "b2",
      name: "Nightly",
    });
  });

  it.skipIf(!existsSync(SPEC))(
    "imports the valid records of a partly invalid history and keeps the file",
    async () => {
      const dir = join(tempDir(), "home");
      cpSync(join(SPEC, "agentHistoryRecordsLoad"), dir, { recursive: true });
      const report = await runDoctorFix({ home: dir, backup: noBackup });
      const invalid = report.sources.find(
        (s) => s.path === "agents/agent-rlm-invalid/history.jsonl",
      );
      expect(invalid?.status).toBe("warning");
      expect(invalid?.problems.map((p) => p.line)).toEqual([1, 2]);
      expect(invalid?.problems[0]?.reason).toMatch(/empty toolCallId/);
      expect(existsSync(join(dir, "agents/agent-rlm-invalid/history.jsonl"))).toBe(true);
      expect(report.status).toBe("partial");
    },
  );
});
