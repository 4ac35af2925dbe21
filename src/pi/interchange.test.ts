import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { runDoctorFix } from "../doctor/fix.js";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { AgentStateSessionManager } from "./agentstate-session-manager.js";
import { snapshot } from "./test-support/pi-script.js";

const tempDir = useTempDirs();
const noBackup = async () => "(test: no backup)";

const user = (text: string) => ({ role: "user" as const, content: text, timestamp: 1000 });
const assistant = (text: string) =>
  ({
    role: "assistant",
    content: [{ type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: 2000,
  }) as never;

/** A branched, labelled, named session, as pi's file mode writes it. */
function writeWithPi(manager: SessionManager): void {
  const first = manager.appendMessage(user("Water the basil"));
  manager.appendModelChange("anthropic", "claude-sonnet");
  manager.appendMessage(assistant("Done"));
  manager.appendLabelChange(first, "start");
  manager.branch(first);
  manager.appendMessage(user("Or the mint?"));
  manager.appendSessionInfo("Garden");
  manager.appendCompaction("basil and mint", first, 100);
}

describe("sessions move between pi's files and agentstate", () => {
  it("opens a pi file imported by doctor --fix and continues it", async () => {
    const home = tempDir();
    const sessions = join(home, "agents", "main", "sessions");
    mkdirSync(sessions, { recursive: true });
    const pi = SessionManager.create("/work", sessions);
    writeWithPi(pi);
    // Gateways name a transcript by its session id; pi's own names carry a time prefix.
    const file = join(sessions, `${pi.getSessionId()}.jsonl`);
    renameSync(pi.getSessionFile() as string, file);
    const written = readFileSync(file, "utf8");
    const fromFile = SessionManager.open(file);
    const report = await runDoctorFix({ home, backup: noBackup, keepSources: true });
    expect(report.sources.map((s) => s.status)).toEqual(["imported"]);

    const agent = openStateHome({ home }).agent("main");
    const adapter = AgentStateSessionManager.open(agent, pi.getSessionId());
    expect(snapshot(adapter)).toBe(snapshot(fromFile));
    expect([...agent.transcripts.exportJsonl(pi.getSessionId())].join("")).toBe(written);

    const leaf = adapter.getLeafId();
    const added = adapter.appendMessage(user("continued"));
    const entry = adapter.getEntry(added);
    expect(entry?.parentId).toBe(leaf);
    expect([...agent.transcripts.exportJsonl(pi.getSessionId())].join("")).toBe(
      `${written}${JSON.stringify(entry)}\n`,
    );
    const listed = await AgentStateSessionManager.list(agent, "/work");
    expect(listed).toMatchObject([{ id: pi.getSessionId(), name: "Garden", messageCount: 4 }]);
  });

  it("opens an exported adapter session in pi's file mode, which continues it", () => {
    const agent = openStateHome({ home: tempDir() }).agent("main");
    const adapter = AgentStateSessionManager.create(agent, "/work");
    writeWithPi(adapter);
    const dir = tempDir();
    const file = join(dir, `2026-01-01T00-00-00-000Z_${adapter.getSessionId()}.jsonl`);
    const exported = [...agent.transcripts.exportJsonl(adapter.getSessionId())].join("");
    writeFileSync(file, exported);

    const pi = SessionManager.open(file);
    expect(snapshot(pi)).toBe(snapshot(adapter));
    const added = pi.appendMessage(user("continued in pi"));
    const entry = pi.getEntry(added);
    expect(entry?.parentId).toBe(adapter.getLeafId());
    expect(readFileSync(file, "utf8")).toBe(`${exported}${JSON.stringify(entry)}\n`);
  });

  it("pi's file mode, for contrast, lets two writers of one session fork it unnoticed", () => {
    const dir = tempDir();
    const pi = SessionManager.create("/work", dir);
    pi.appendMessage(user("start"));
    pi.appendMessage(assistant("ok"));
    const file = pi.getSessionFile() as string;
    const one = SessionManager.open(file);
    const two = SessionManager.open(file);
    const a = one.appendMessage(user("from one"));
    const b = two.appendMessage(user("from two")); // no error: two never saw one's entry
    const reopened = SessionManager.open(file);
    expect(reopened.getEntry(a)?.parentId).toBe(reopened.getEntry(b)?.parentId);
    expect(reopened.getBranch().map((e) => e.id)).not.toContain(a);
  });
});
