import { SessionManager } from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { type AgentState, openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { AgentStateSessionManager } from "./agentstate-session-manager.js";

const tempDir = useTempDirs();

function agent(home = tempDir()): AgentState {
  return openStateHome({ home }).agent("main");
}

const user = (text: string) => ({ role: "user" as const, content: text, timestamp: 1 });

/** The rows of a session as stored: type and id of every event, in seq order. */
function rows(state: AgentState, sessionId: string): { seq: number; json: string }[] {
  return state.db
    .prepare<{ seq: number; event_json: string }>(
      "SELECT seq, event_json FROM agentstate_events_v1 WHERE session_id = ? ORDER BY seq",
    )
    .all(sessionId)
    .map((row) => ({ seq: row.seq, json: row.event_json }));
}

describe("AgentStateSessionManager", () => {
  it("is a pi SessionManager that names no file", () => {
    const manager = AgentStateSessionManager.create(agent(), "/work");
    expect(manager).toBeInstanceOf(SessionManager);
    expect(manager.getSessionFile()).toBeUndefined();
    expect(manager.isPersisted()).toBe(true);
    expect(manager.getCwd()).toBe("/work");
  });

  it("stores the header as adjusted before the first append, and every entry in its call", () => {
    const state = agent();
    const manager = AgentStateSessionManager.create(state, "/work");
    const header = manager.getHeader();
    if (header === null) throw new Error("no header");
    // What a gateway's run preparation does between open and the first append.
    header.id = "run-session";
    header.cwd = "/elsewhere";
    (manager as unknown as { sessionId: string }).sessionId = "run-session";
    expect(rows(state, "run-session")).toEqual([]);
    const first = manager.appendMessage(user("hello"));
    const stored = rows(state, "run-session").map((row) => JSON.parse(row.json));
    expect(stored.map((e) => e.type)).toEqual(["session", "message"]);
    expect(stored[0]).toMatchObject({ id: "run-session", cwd: "/elsewhere" });
    expect(stored[1]).toMatchObject({ id: first, parentId: null });
    // No assistant message yet: pi's file mode would still hold these in memory.
    const model = manager.appendModelChange("anthropic", "claude");
    const thinking = manager.appendThinkingLevelChange("high");
    const label = manager.appendLabelChange(first, "start");
    const info = manager.appendSessionInfo("  Named  ");
    const custom = manager.appendCustomEntry("ext", { a: 1 });
    const customMessage = manager.appendCustomMessageEntry("ext", "shown", true);
    const compaction = manager.appendCompaction("sum", first, 10);
    const summary = manager.branchWithSummary(first, "left", { d: 1 });
    const ids = rows(state, "run-session").map((row) => JSON.parse(row.json).id);
    expect(ids.slice(2)).toEqual([
      model,
      thinking,
      label,
      info,
      custom,
      customMessage,
      compaction,
      summary,
    ]);
    expect(state.kv.get("pi.sessions", "run-session")).toMatchObject({
      cwd: "/elsewhere",
      name: "Named",
      messageCount: 1,
      firstMessage: "hello",
    });
  });

  it("reopens a stored session with the same entries, labels, leaf and name", () => {
    const state = agent();
    const manager = AgentStateSessionManager.create(state, "/work");
    const first = manager.appendMessage(user("one"));
    manager.appendMessage(user("two"));
    manager.appendLabelChange(first, "here");
    manager.appendSessionInfo("title");
    const reopened = AgentStateSessionManager.open(state, manager.getSessionId());
    expect(reopened.getEntries()).toEqual(manager.getEntries());
    expect(reopened.getHeader()).toEqual(manager.getHeader());
    expect(reopened.getLeafId()).toBe(manager.getLeafId());
    expect(reopened.getLabel(first)).toBe("here");
    expect(reopened.getSessionName()).toBe("title");
    expect(reopened.getTree()).toEqual(manager.getTree());
    expect(reopened.getCwd()).toBe("/work");
    expect(AgentStateSessionManager.open(state, manager.getSessionId(), "/other").getCwd()).toBe(
      "/other",
    );
  });

  it("opens an unknown id as a new session with that id, stored at its first append", () => {
    const state = agent();
    const manager = AgentStateSessionManager.open(state, "fresh-id");
    expect(manager.getSessionId()).toBe("fresh-id");
    expect(rows(state, "fresh-id")).toEqual([]);
    manager.appendMessage(user("hi"));
    expect(rows(state, "fresh-id")).toHaveLength(2);
  });

  it("stores a branched session and a fork at once, naming the parent by id", () => {
    const state = agent();
    const manager = AgentStateSessionManager.create(state, "/work");
    const first = manager.appendMessage(user("one"));
    manager.appendLabelChange(first, "mark");
    manager.appendMessage(user("two"));
    const source = manager.getSessionId();
    expect(manager.createBranchedSession(first)).toBeUndefined();
    const branched = manager.getSessionId();
    expect(branched).not.toBe(source);
    const stored = rows(state, branched).map((row) => JSON.parse(row.json));
    expect(stored.map((e) => e.type)).toEqual(["session", "message", "label"]);
    expect(stored[0].parentSession).toBe(source);
    const fork = AgentStateSessionManager.forkFrom(state, source, "/target");
    const forked = rows(state, fork.getSessionId()).map((row) => JSON.parse(row.json));
    expect(forked[0]).toMatchObject({ cwd: "/target", parentSession: source });
    expect(forked.slice(1)).toEqual(
      rows(state, source)
        .slice(1)
        .map((r) => JSON.parse(r.json)),
    );
  });

  it("starts a new session on newSession and resumes by id or pi file path", () => {
    const state = agent();
    const manager = AgentStateSessionManager.create(state, "/work");
    manager.appendMessage(user("one"));
    const first = manager.getSessionId();
    expect(manager.newSession()).toBeUndefined();
    expect(manager.getEntries()).toEqual([]);
    manager.appendMessage(user("two"));
    const second = manager.getSessionId();
    manager.setSessionFile(`/old/sessions/2026-01-01T00-00-00-000Z_${first}.jsonl`);
    expect(manager.getSessionId()).toBe(first);
    expect(manager.getEntries().map((e) => e.type)).toEqual(["message"]);
    manager.setSessionFile(second);
    expect(manager.getSessionId()).toBe(second);
  });

  it("lists sessions as pi's SessionInfo, per cwd and in all, and continues the latest", async () => {
    const state = agent();
    const a = AgentStateSessionManager.create(state, "/a");
    a.appendMessage({ role: "user", content: "first a", timestamp: 1000 });
    const b = AgentStateSessionManager.create(state, "/b");
    b.appendMessage({ role: "user", content: "first b", timestamp: 2000 });
    b.appendSessionInfo("bee");
    const listed = await AgentStateSessionManager.list(state, "/a");
    expect(listed.map((s) => s.id)).toEqual([a.getSessionId()]);
    expect(listed[0]).toMatchObject({
      path: a.getSessionId(),
      cwd: "/a",
      messageCount: 1,
      firstMessage: "first a",
      allMessagesText: "first a",
    });
    const all = await AgentStateSessionManager.listAll(state);
    expect(all.map((s) => s.id)).toEqual([b.getSessionId(), a.getSessionId()]);
    expect(all[0]?.name).toBe("bee");
    expect(all[0]?.modified.getTime()).toBe(2000);
    const recent = AgentStateSessionManager.continueRecent(state, "/a");
    expect(recent.getSessionId()).toBe(a.getSessionId());
    const none = AgentStateSessionManager.continueRecent(state, "/c");
    expect(none.getEntries()).toEqual([]);
  });

  it("keeps the key's index entry on the session, with its name", () => {
    const state = agent();
    const key = "agent:main:main";
    const manager = AgentStateSessionManager.create(state, "/w", { sessionKey: key });
    manager.appendMessage(user("hi"));
    const first = manager.getSessionId();
    expect(state.sessions.get(key)?.entry).toMatchObject({ sessionId: first });
    expect(state.lifecycle.get(first).sessionKey).toBe(key);
    manager.appendSessionInfo("Chat");
    expect(state.sessions.get(key)?.entry.displayName).toBe("Chat");
    manager.newSession();
    manager.appendMessage(user("again"));
    expect(state.sessions.get(key)?.entry.sessionId).toBe(manager.getSessionId());
    expect(state.lifecycle.get(first).endedAt).not.toBeNull();
    expect(() => AgentStateSessionManager.create(state, "/w", { key } as never)).toThrow(
      /Unknown AgentStateSessionManager option: key/,
    );
  });

  it("refuses an append after another writer's with E_CONFLICT, and takes its entry back", () => {
    const state = agent();
    const one = AgentStateSessionManager.create(state, "/w");
    one.appendMessage(user("one"));
    const two = AgentStateSessionManager.open(state, one.getSessionId());
    two.appendMessage(user("two"));
    const before = one.getEntries();
    const leaf = one.getLeafId();
    let error: unknown;
    try {
      one.appendMessage(user("stale"));
    } catch (e) {
      error = e;
    }
    expect(isStateError(error, "E_CONFLICT")).toBe(true);
    expect(one.getEntries()).toEqual(before);
    expect(one.getLeafId()).toBe(leaf);
    const again = AgentStateSessionManager.open(state, one.getSessionId());
    again.appendMessage(user("after"));
    expect(again.getBranch().map((e) => e.type)).toEqual(["message", "message", "message"]);
  });

  it("lists a session whose name and first message are too long for a summary row", async () => {
    const state = agent();
    const manager = AgentStateSessionManager.create(state, "/w");
    const long = "n".repeat(100_000);
    manager.appendMessage(user(`q${long}`));
    manager.appendSessionInfo(` ${long} `);
    const [info] = await AgentStateSessionManager.listAll(state);
    expect(info?.name).toBe(long);
    expect(info?.firstMessage).toBe(`q${long}`);
    manager.appendSessionInfo("short");
    expect((await AgentStateSessionManager.listAll(state))[0]?.name).toBe("short");
  });
});
