import { describe, expect, it } from "vitest";
import { isStateError } from "../../db/errors.js";
import { openStateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";

const tempDir = useTempDirs();
const KEY = "agent:main:main";

function setup() {
  const home = openStateHome({ home: tempDir() });
  const agent = home.agent("main");
  const say = (sessionId: string, role: string, text: string) =>
    agent.transcripts.append(sessionId, {
      type: "message",
      message: { role, content: [{ type: "text", text }] },
    });
  return { home, agent, say };
}

describe("SessionLifecycle", () => {
  it("starts a session, points the entry at it and writes its header", () => {
    const { home, agent } = setup();
    const session = agent.lifecycle.start(KEY, { cwd: "/work" });
    expect(agent.sessions.get(KEY)?.entry.sessionId).toBe(session.sessionId);
    expect(agent.transcripts.read(session.sessionId)[0]?.event).toMatchObject({
      type: "session",
      id: session.sessionId,
      cwd: "/work",
    });
    expect(() => agent.lifecycle.start(KEY)).toThrowError(
      expect.objectContaining({ code: "E_CONFLICT" }),
    );
    expect(agent.lifecycle.ensure(KEY).sessionId).toBe(session.sessionId);
    home.close();
  });

  it("reset ends the active session and starts a successor with the reason and message", () => {
    const { home, agent, say } = setup();
    const first = agent.lifecycle.start(KEY);
    say(first.sessionId, "user", "old topic");
    const second = agent.lifecycle.reset(KEY, {
      reason: "new",
      message: "/new let's plan the trip",
    });
    expect(second).toMatchObject({
      resetReason: "new",
      resetMessage: "/new let's plan the trip",
      predecessorId: first.sessionId,
      endedAt: null,
    });
    expect(agent.lifecycle.get(first.sessionId).endedAt).not.toBeNull();
    expect(agent.lifecycle.list(KEY).map((s) => s.sessionId)).toEqual([
      first.sessionId,
      second.sessionId,
    ]);
    say(second.sessionId, "user", "trip to Lisbon");
    const restored = agent.lifecycle.restore(KEY);
    expect(restored?.session.sessionId).toBe(second.sessionId);
    expect(restored?.context.map((c) => c.event.message)).toEqual([
      { role: "user", content: [{ type: "text", text: "trip to Lisbon" }] },
    ]);
    home.close();
  });

  it("compaction starts a session carrying the summary and the kept tail, and snapshots the old one", () => {
    const { home, agent, say } = setup();
    const first = agent.lifecycle.start(KEY);
    say(first.sessionId, "user", "one");
    say(first.sessionId, "assistant", "two");
    const kept = say(first.sessionId, "user", "three");
    say(first.sessionId, "assistant", "four");
    const { session, snapshot } = agent.lifecycle.compact(KEY, {
      summary: "Counted to two.",
      firstKeptEntryId: kept.event.id,
      tokensBefore: 1234,
    });
    expect(session).toMatchObject({ resetReason: "compaction", predecessorId: first.sessionId });
    expect(snapshot).toMatchObject({
      sessionId: first.sessionId,
      reason: "compaction",
      eventCount: 5,
    });
    expect(snapshot.metadata).toMatchObject({
      successorSessionId: session.sessionId,
      tokensBefore: 1234,
    });
    const context = agent.branches.context(session.sessionId);
    expect(context.map((c) => [c.kind, c.role])).toEqual([
      ["summary", "compactionSummary"],
      ["message", "user"],
      ["message", "assistant"],
    ]);
    expect(context[0]?.event.summary).toBe("Counted to two.");
    expect(agent.sessions.get(KEY)?.entry).toMatchObject({
      sessionId: session.sessionId,
      compactionCount: 1,
    });
    expect(agent.snapshots.restore(first.sessionId, snapshot.snapshotId)).toHaveLength(4);
    expect(() =>
      agent.lifecycle.compact(KEY, { summary: "x", firstKeptEntryId: "nope" }),
    ).toThrowError(/not on the current branch/);
    home.close();
  });

  it("delete removes a session with its rows, search entries and unshared blobs", () => {
    const { home, agent, say } = setup();
    const session = agent.lifecycle.start(KEY);
    say(session.sessionId, "user", "unforgettable zebra");
    agent.transcripts.append(session.sessionId, {
      type: "message",
      message: {
        role: "user",
        content: [{ type: "image", data: "A".repeat(40_000), mimeType: "image/png" }],
      },
    });
    expect(agent.search.search("zebra")).toHaveLength(1);
    agent.snapshots.create(session.sessionId, { reason: "manual" });
    expect(agent.lifecycle.delete(session.sessionId)).toBe(true);
    for (const table of [
      "transcript_events",
      "transcript_fts",
      "transcript_snapshots",
      "transcript_blobs",
      "transcript_blob_refs",
    ]) {
      expect(agent.db.prepare(`SELECT count(*) AS n FROM ${table}`).get(), table).toEqual({ n: 0 });
    }
    expect(agent.search.search("zebra")).toEqual([]);
    try {
      agent.lifecycle.get(session.sessionId);
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_NOT_FOUND")).toBe(true);
    }
    home.close();
  });
});

describe("TranscriptBranches", () => {
  it("moves the leaf, records branch summaries and labels, and builds the branch's context", () => {
    const { home, agent, say } = setup();
    const { sessionId } = agent.lifecycle.start(KEY);
    const q = say(sessionId, "user", "question");
    say(sessionId, "assistant", "first answer");
    expect(agent.branches.branch(sessionId, q.event.id)).toBe(q.event.id);
    const retry = say(sessionId, "assistant", "second answer");
    expect(retry.event.parentId).toBe(q.event.id);
    expect(agent.branches.tree(sessionId).branchPoints()).toEqual([q.event.id]);
    expect(agent.branches.context(sessionId).map((c) => c.event.id)).toEqual([
      q.event.id,
      retry.event.id,
    ]);
    const summaryId = agent.branches.branch(sessionId, q.event.id, { summary: "tried twice" });
    expect(agent.branches.leaf(sessionId)).toBe(summaryId);
    const label = agent.branches.label(sessionId, q.event.id, "important");
    expect(label.event).toMatchObject({ type: "label", targetId: q.event.id, label: "important" });
    expect(() => agent.branches.branch(sessionId, "missing")).toThrowError(/no event missing/);
    home.close();
  });

  it("forks a branch into a new session that keeps ids and names its parent", () => {
    const { home, agent, say } = setup();
    const { sessionId } = agent.lifecycle.start(KEY, { cwd: "/w" });
    const a = say(sessionId, "user", "a");
    const b = say(sessionId, "assistant", "b");
    say(sessionId, "user", "c");
    const fork = agent.branches.fork(sessionId, { fromEventId: b.event.id });
    expect(fork).toMatchObject({ predecessorId: sessionId, resetReason: "fork", sessionKey: KEY });
    const events = agent.transcripts.read(fork.sessionId).map((e) => e.event);
    expect(events[0]).toMatchObject({
      type: "session",
      id: fork.sessionId,
      cwd: "/w",
      parentSession: sessionId,
    });
    expect(events.slice(1)).toEqual([a.event, b.event]);
    expect(agent.branches.leaf(fork.sessionId)).toBe(b.event.id);
    home.close();
  });
});

describe("home-level API", () => {
  it("addresses sessions by (agentId, key) and transcripts by { agentId, sessionId }", () => {
    const home = openStateHome({ home: tempDir() });
    const session = home.sessions.start("main", KEY);
    const scope = { agentId: "main", sessionId: session.sessionId };
    home.transcripts.append(scope, {
      type: "message",
      message: { role: "user", content: "find the basil note" },
    });
    home.transcripts.append(
      { agentId: "research", sessionId: "r1" },
      { type: "message", message: { role: "user", content: "basil studies" } },
    );
    expect(home.transcripts.listScopes().map((s) => [s.agentId, s.eventCount])).toEqual(
      expect.arrayContaining([
        ["main", 2],
        ["research", 2],
      ]),
    );
    expect(
      home.transcripts
        .search("basil")
        .map((h) => h.agentId)
        .sort(),
    ).toEqual(["main", "research"]);
    expect(home.transcripts.search("basil", { agentId: "research" })).toHaveLength(1);
    expect(home.sessions.patch("main", KEY, { label: "Main" }).entry).toMatchObject({
      label: "Main",
      sessionId: session.sessionId,
    });
    expect(() => home.transcripts.read({ agentId: "ghost", sessionId: "x" })).toThrowError(
      /no agent "ghost"/,
    );
    expect(home.hasAgent("ghost")).toBe(false);
    home.close();
  });
});
