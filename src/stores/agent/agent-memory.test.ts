import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { createAgentStores } from "./agent-stores.js";

const tempDir = useTempDirs();
const KEY = "agent:main:main";

function open() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const stores = createAgentStores(db, "main");
  const { sessionId } = stores.lifecycle.start(KEY);
  return { db, stores, memory: stores.memory, sessionId };
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return isStateError(error) ? error.code : (error as Error).name;
  }
  return "none";
}

function seedFacts(memory: ReturnType<typeof open>["memory"]) {
  const { facts } = memory;
  facts.upsert({
    scope: "user",
    key: "name",
    category: "background",
    value: "Dana",
    recallPolicy: "always",
  });
  facts.upsert({
    scope: "agent",
    key: "openai.api_key",
    category: "account",
    value: "env:OPENAI_API_KEY",
    sensitivity: "secret_ref",
    recallPolicy: "always",
  });
  facts.upsert({
    scope: "project:web",
    key: "staging.host",
    category: "environment",
    value: "staging.example.net",
    recallPolicy: "topic_bound",
    tags: ["infra"],
  });
  facts.upsert({
    scope: "user",
    key: "home.address",
    category: "background",
    value: "12 Elm Street",
    sensitivity: "sensitive",
    recallPolicy: "always",
  });
  facts.upsert({
    scope: "user",
    key: "coffee",
    category: "preference",
    value: "flat white, no sugar",
  });
}

describe("AgentMemory.switchTopic", () => {
  it("activates the topic, pauses the previous one and records the state row", () => {
    const { db, memory, sessionId } = open();
    memory.topics.create(sessionId, { topicId: "a", title: "A" });
    memory.topics.create(sessionId, { topicId: "b", title: "B", status: "paused" });
    expect(memory.switchTopic(sessionId, "a")).toMatchObject({
      topic: { topicId: "a", status: "open" },
      previous: null,
    });
    const toB = memory.switchTopic(sessionId, "b");
    expect(toB.topic).toMatchObject({ topicId: "b", status: "open" });
    expect(toB.previous).toMatchObject({ topicId: "a", status: "paused" });
    expect(db.prepare("SELECT session_id, active_topic_id FROM session_state").all()).toEqual([
      { session_id: sessionId, active_topic_id: "b" },
    ]);
    expect(memory.switchTopic(sessionId, null)).toMatchObject({
      topic: null,
      state: { activeTopicId: null },
    });
    expect(codeOf(() => memory.switchTopic(sessionId, "missing"))).toBe("E_NOT_FOUND");
    expect(codeOf(() => memory.switchTopic("no-session", null))).toBe("E_NOT_FOUND");
    db.close();
  });

  it("refuses a topic of another conversation", () => {
    const { db, stores, memory } = open();
    const other = stores.lifecycle.start("agent:main:other").sessionId;
    memory.topics.create(other, { topicId: "theirs", title: "Other" });
    const mine = stores.lifecycle.active(KEY)?.sessionId ?? "";
    expect(codeOf(() => memory.switchTopic(mine, "theirs"))).toBe("E_INVALID_ARGUMENT");
    db.close();
  });
});

describe("AgentMemory.recall", () => {
  it("returns always facts, the topic's facts and query hits, secrets as references", () => {
    const { db, memory, sessionId } = open();
    seedFacts(memory);
    memory.topics.create(sessionId, {
      topicId: "deploy",
      title: "Deploy",
      labels: ["Infra"],
      summaryShort: "Moving CI to the new runner",
      openLoops: ["rotate the deploy key"],
    });
    const none = memory.recall({ sessionId });
    expect(none.topic).toBeNull();
    expect(none.facts.map((f) => [f.key, f.reason])).toEqual([
      ["name", "always"],
      ["openai.api_key", "always"],
    ]);
    const secret = none.facts[1];
    expect(secret).toMatchObject({ value: null, reference: "env:OPENAI_API_KEY" });
    expect(none.text).toContain(
      "- [account] openai.api_key: secret kept at env:OPENAI_API_KEY (reference only; the value is not inlined)",
    );

    memory.switchTopic(sessionId, "deploy");
    const onTopic = memory.recall({ sessionId, query: "coffee order?" });
    expect(onTopic.topic?.topicId).toBe("deploy");
    expect(onTopic.facts.map((f) => [f.key, f.reason])).toEqual([
      ["name", "always"],
      ["openai.api_key", "always"],
      ["staging.host", "topic"],
      ["coffee", "query"],
    ]);
    expect(onTopic.text).toContain("## Topic: Deploy (open)");
    expect(onTopic.text).toContain("Summary: Moving CI to the new runner");
    expect(onTopic.text).toContain("Open loops:\n- rotate the deploy key");
    expect(onTopic.text).not.toContain("12 Elm Street");

    const withSensitive = memory.recall({ sessionId, topicId: null, includeSensitive: true });
    expect(withSensitive.topic).toBeNull();
    expect(withSensitive.facts.map((f) => f.key)).toContain("home.address");
    expect(withSensitive.text).toContain("12 Elm Street");
    expect(memory.recall({ sessionId, scopes: ["agent"] }).facts.map((f) => f.key)).toEqual([
      "openai.api_key",
    ]);
    db.close();
  });

  it("binds facts to a topic by tag or by source topic", () => {
    const { db, memory, sessionId } = open();
    memory.topics.create(sessionId, { topicId: "a", title: "A", labels: ["billing"] });
    memory.topics.create(sessionId, { topicId: "b", title: "B" });
    memory.facts.upsert({
      scope: "project",
      key: "invoice.day",
      category: "decision",
      value: "the 1st",
      recallPolicy: "topic_bound",
      tags: ["Billing"],
    });
    memory.facts.upsert({
      scope: "project",
      key: "b.decision",
      category: "decision",
      value: "ship Friday",
      recallPolicy: "topic_bound",
      sourceTopicId: "b",
    });
    expect(memory.recall({ sessionId, topicId: "a" }).facts.map((f) => f.key)).toEqual([
      "invoice.day",
    ]);
    expect(memory.recall({ sessionId, topicId: "b" }).facts.map((f) => f.key)).toEqual([
      "b.decision",
    ]);
    expect(memory.recall({ sessionId }).facts).toEqual([]);
    expect(codeOf(() => memory.recall({ sessionId: "nope" }))).toBe("E_NOT_FOUND");
    expect(codeOf(() => memory.recall({ sessionId, topicId: "zz" }))).toBe("E_NOT_FOUND");
    expect(codeOf(() => memory.recall({ sessionId, qeury: "x" } as never))).toBe("TypeError");
    db.close();
  });
});

describe("AgentMemory.recover", () => {
  it("returns the active session, topic, open loops, facts and other topics", () => {
    const { db, memory, sessionId } = open();
    seedFacts(memory);
    memory.topics.create(sessionId, { topicId: "a", title: "A", summaryShort: "about A" });
    memory.topics.create(sessionId, {
      topicId: "b",
      title: "B",
      labels: ["infra"],
      openLoops: ["answer Dana"],
    });
    memory.switchTopic(sessionId, "a");
    memory.switchTopic(sessionId, "b");
    const recovered = memory.recover(KEY);
    expect(recovered).toMatchObject({
      session: { sessionId },
      state: { activeTopicId: "b" },
      topic: { topicId: "b", openLoops: ["answer Dana"] },
    });
    expect(recovered?.topics.map((t) => [t.topicId, t.status]).sort()).toEqual([
      ["a", "paused"],
      ["b", "open"],
    ]);
    expect(recovered?.facts.map((f) => f.key)).toEqual(["name", "openai.api_key", "staging.host"]);
    expect(memory.recover("agent:main:unknown")).toBeUndefined();
    db.close();
  });

  it("carries topics over compaction but not over a reset", () => {
    const { db, stores, memory, sessionId } = open();
    memory.topics.create(sessionId, { topicId: "a", title: "A", openLoops: ["finish A"] });
    memory.switchTopic(sessionId, "a");
    const { session } = stores.lifecycle.compact(KEY, { summary: "so far" });
    const recovered = memory.recover(KEY);
    expect(recovered?.session.sessionId).toBe(session.sessionId);
    expect(recovered?.state?.sessionId).toBe(sessionId);
    expect(recovered?.topic?.openLoops).toEqual(["finish A"]);
    // The successor may switch to an inherited topic; it then has its own state row.
    memory.topics.create(session.sessionId, { topicId: "c", title: "C" });
    memory.switchTopic(session.sessionId, "c");
    memory.switchTopic(session.sessionId, "a");
    expect(memory.state.get(session.sessionId)?.activeTopicId).toBe("a");

    stores.lifecycle.reset(KEY);
    const fresh = memory.recover(KEY);
    expect(fresh).toMatchObject({ state: null, topic: null, topics: [] });
    db.close();
  });
});

describe("context snapshots and session state", () => {
  it("stores snapshots per session, topic and kind; the newest wins", () => {
    const { db, memory, sessionId } = open();
    memory.topics.create(sessionId, { topicId: "a", title: "A" });
    const { contexts } = memory;
    contexts.put(sessionId, { kind: "summary", content: "session v1" });
    contexts.put(sessionId, { kind: "summary", content: "session v2" });
    contexts.put(sessionId, { kind: "summary", content: "topic A", topicId: "a" });
    contexts.put(sessionId, { kind: "handoff", content: "for the next agent" });
    expect(contexts.latest(sessionId, { kind: "summary" })?.content).toBe("session v2");
    expect(contexts.latest(sessionId, { kind: "summary", topicId: "a" })?.content).toBe("topic A");
    expect(contexts.latest(sessionId, { kind: "nothing" })).toBeUndefined();
    expect(contexts.list(sessionId).map((c) => c.content)).toHaveLength(4);
    expect(
      contexts.list(sessionId, { topicId: null, kind: "summary" }).map((c) => c.content),
    ).toEqual(["session v2", "session v1"]);
    expect(codeOf(() => contexts.put(sessionId, { kind: "x", content: "y", topicId: "zz" }))).toBe(
      "E_NOT_FOUND",
    );
    expect(codeOf(() => contexts.put("nope", { kind: "x", content: "y" }))).toBe("E_NOT_FOUND");
    expect(memory.topics.delete("a")).toBe(true);
    expect(contexts.latest(sessionId, { kind: "summary", topicId: "a" })).toBeUndefined();
    db.close();
  });

  it("patches the state row field by field", () => {
    const { db, memory, sessionId } = open();
    expect(memory.state.get(sessionId)).toBeUndefined();
    memory.state.patch(sessionId, { lastTurnId: "turn-1" });
    const state = memory.state.patch(sessionId, { lastCompactedAt: 1_700_000_000_000 });
    expect(state).toMatchObject({ lastTurnId: "turn-1", lastCompactedAt: 1_700_000_000_000 });
    expect(db.prepare("SELECT last_turn_id, last_compacted_at FROM session_state").get()).toEqual({
      last_turn_id: "turn-1",
      last_compacted_at: 1_700_000_000_000,
    });
    expect(codeOf(() => memory.state.patch(sessionId, { lastCompactedAt: -1 }))).toBe(
      "E_INVALID_ARGUMENT",
    );
    db.close();
  });
});
