import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { createAgentStores } from "./agent-stores.js";

const tempDir = useTempDirs();

function open() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const stores = createAgentStores(db, "main");
  const { sessionId } = stores.lifecycle.start("agent:main:main");
  const say = (text: string) =>
    stores.transcripts.append(sessionId, {
      type: "message",
      message: { role: "user", content: [{ type: "text", text }] },
    }).event.id;
  return { db, stores, topics: stores.memory.topics, sessionId, say };
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return isStateError(error) ? error.code : (error as Error).name;
  }
  return "none";
}

describe("TopicStore", () => {
  it("creates, updates and lists topics with normalized labels", () => {
    const { db, topics, sessionId } = open();
    const a = topics.create(sessionId, {
      topicId: "deploy",
      title: "Deploy pipeline",
      labels: ["Infra", " infra ", "CI"],
      openLoops: ["pick a runner"],
    });
    expect(a).toMatchObject({ status: "open", labels: ["infra", "ci"], summaryShort: "" });
    const b = topics.create(sessionId, { title: "Billing", parentTopicId: "deploy" });
    expect(b.parentTopicId).toBe("deploy");
    const updated = topics.update("deploy", {
      status: "paused",
      summaryShort: "Runner chosen, secrets pending",
      openLoops: ["wire the secrets", "test rollback"],
    });
    expect(updated).toMatchObject({
      title: "Deploy pipeline",
      status: "paused",
      labels: ["infra", "ci"],
    });
    expect(topics.get("deploy")).toEqual(updated);
    expect(topics.list(sessionId, { status: "paused" }).map((t) => t.topicId)).toEqual(["deploy"]);
    expect(topics.list(sessionId)).toHaveLength(2);
    const row = db
      .prepare("SELECT status, open_loops_json, labels_json FROM topics WHERE topic_id = 'deploy'")
      .get();
    expect(row).toEqual({
      status: "paused",
      open_loops_json: JSON.stringify(["wire the secrets", "test rollback"]),
      labels_json: JSON.stringify(["infra", "ci"]),
    });
    db.close();
  });

  it("refuses unknown sessions, parents, cycles, bad statuses and misspelled fields", () => {
    const { db, topics, sessionId } = open();
    topics.create(sessionId, { topicId: "a", title: "A" });
    topics.create(sessionId, { topicId: "b", title: "B", parentTopicId: "a" });
    expect(codeOf(() => topics.create("nope", { title: "x" }))).toBe("E_NOT_FOUND");
    expect(codeOf(() => topics.create(sessionId, { title: "x", parentTopicId: "zz" }))).toBe(
      "E_NOT_FOUND",
    );
    expect(codeOf(() => topics.create(sessionId, { topicId: "a", title: "again" }))).toBe(
      "E_CONFLICT",
    );
    expect(codeOf(() => topics.update("a", { parentTopicId: "b" }))).toBe("E_INVALID_ARGUMENT");
    expect(codeOf(() => topics.update("a", { parentTopicId: "a" }))).toBe("E_INVALID_ARGUMENT");
    expect(codeOf(() => topics.update("a", { status: "done" as unknown as "closed" }))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(codeOf(() => topics.create(sessionId, { title: "" }))).toBe("E_INVALID_ARGUMENT");
    expect(codeOf(() => topics.update("a", { titel: "x" } as never))).toBe("TypeError");
    expect(codeOf(() => topics.update("missing", { title: "x" }))).toBe("E_NOT_FOUND");
    expect(db.prepare("SELECT count(*) AS n FROM topics").get()).toEqual({ n: 2 });
    db.close();
  });

  it("links real events only, keeps one primary topic per event", () => {
    const { db, topics, sessionId, say } = open();
    topics.create(sessionId, { topicId: "a", title: "A" });
    topics.create(sessionId, { topicId: "b", title: "B" });
    const e1 = say("set up the runner");
    const e2 = say("and the invoices");
    topics.link("a", { eventId: e1, isPrimary: true, reason: "runner" });
    topics.link("b", { eventId: e1, score: 0.4 });
    topics.link("b", { eventId: e2, isPrimary: true });
    expect(codeOf(() => topics.link("a", { eventId: "no-such-event" }))).toBe("E_NOT_FOUND");
    expect(codeOf(() => topics.link("a", { eventId: e2, score: 2 }))).toBe("E_INVALID_ARGUMENT");
    // Moving the primary flag demotes the event's previous primary topic.
    topics.link("b", { eventId: e1, isPrimary: true, score: 0.9 });
    expect(topics.topicsOf(sessionId, e1).map((m) => [m.topicId, m.isPrimary, m.score])).toEqual([
      ["b", true, 0.9],
      ["a", false, 1],
    ]);
    expect(topics.members("b").map((m) => m.eventId)).toEqual([e1, e2]);
    const rows = db
      .prepare("SELECT * FROM topic_membership ORDER BY topic_id, event_id")
      .all() as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      // Membership names the event; the message text stays in the transcript only.
      expect(Object.keys(row).sort()).toEqual([
        "created_at",
        "event_id",
        "is_primary",
        "reason",
        "score",
        "session_id",
        "topic_id",
      ]);
      expect(row.session_id).toBe(sessionId);
    }
    // The schema itself refuses a membership that points at no event.
    expect(
      codeOf(() =>
        db
          .prepare(
            "INSERT INTO topic_membership (session_id, event_id, topic_id, created_at) VALUES (?, 'ghost', 'a', 0)",
          )
          .run(sessionId),
      ),
    ).toBe("E_CONSTRAINT");
    expect(topics.unlink("a", e1)).toBe(true);
    expect(topics.unlink("a", e1)).toBe(false);
    db.close();
  });

  it("deleting a session removes its topics, memberships, state and snapshots", () => {
    const { db, stores, topics, sessionId, say } = open();
    const other = stores.lifecycle.start("agent:main:other").sessionId;
    topics.create(sessionId, { topicId: "a", title: "A" });
    topics.create(other, { topicId: "keep", title: "Other session" });
    for (let i = 0; i < 5; i++) topics.link("a", { eventId: say(`message ${i}`) });
    stores.memory.switchTopic(sessionId, "a");
    stores.memory.contexts.put(sessionId, { kind: "summary", content: "A so far", topicId: "a" });
    const count = (table: string) =>
      (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    expect(count("topic_membership")).toBe(5);
    expect(stores.lifecycle.delete(sessionId)).toBe(true);
    expect(count("topic_membership")).toBe(0);
    expect(count("session_state")).toBe(0);
    expect(count("context_snapshots")).toBe(0);
    expect(db.prepare("SELECT topic_id FROM topics").all()).toEqual([{ topic_id: "keep" }]);
    db.close();
  });

  it("deleting a topic drops its memberships and detaches its children", () => {
    const { db, topics, sessionId, say } = open();
    topics.create(sessionId, { topicId: "a", title: "A" });
    topics.create(sessionId, { topicId: "child", title: "Child", parentTopicId: "a" });
    topics.link("a", { eventId: say("hello") });
    expect(topics.delete("a")).toBe(true);
    expect(topics.get("child")?.parentTopicId).toBeNull();
    expect(db.prepare("SELECT count(*) AS n FROM topic_membership").get()).toEqual({ n: 0 });
    db.close();
  });
});
