import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError, type StateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { createAgentStores } from "./agent-stores.js";

const tempDir = useTempDirs();
const KEY_LIKE = "sk-proj-4fJ9qLw2ZxT7bN1cVd8RkP3sY6uH0aEm";

function open() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const stores = createAgentStores(db, "main");
  const { sessionId } = stores.lifecycle.start("agent:main:main");
  const eventId = stores.transcripts.append(sessionId, {
    type: "message",
    message: { role: "user", content: [{ type: "text", text: "I prefer vim" }] },
  }).event.id;
  return { db, stores, facts: stores.memory.facts, sessionId, eventId };
}

function errorOf(fn: () => unknown): StateError | Error | undefined {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  return undefined;
}

describe("FactStore", () => {
  it("upserts by (scope, key) and keeps replaced versions in history", () => {
    const { db, facts, sessionId, eventId } = open();
    const first = facts.upsert({
      scope: "user",
      key: "editor",
      category: "preference",
      value: "vim",
      source: { sessionId, eventId },
      tags: ["Tools"],
    });
    expect(first).toMatchObject({
      version: 1,
      value: "vim",
      reference: null,
      sensitivity: "normal",
      recallPolicy: "on_demand",
      confidence: 1,
      tags: ["tools"],
      source: { sessionId, eventId },
    });
    // The same content again changes nothing.
    expect(
      facts.upsert({ scope: "user", key: "editor", category: "preference", value: "vim" }),
    ).toEqual(first);
    const second = facts.upsert({
      scope: "user",
      key: "editor",
      category: "preference",
      value: "helix",
      confidence: 0.8,
    });
    expect(second).toMatchObject({
      factId: first.factId,
      version: 2,
      value: "helix",
      tags: ["tools"],
    });
    // Optional fields left out keep their values.
    expect(second.source).toEqual({ sessionId, eventId });
    expect(facts.history(first.factId)).toEqual([
      expect.objectContaining({
        version: 1,
        value: "vim",
        confidence: 1,
        replacedAt: second.updatedAt,
      }),
    ]);
    expect(db.prepare("SELECT count(*) AS n FROM facts").get()).toEqual({ n: 1 });
    expect(db.prepare("SELECT version, value FROM fact_history").all()).toEqual([
      { version: 1, value: "vim" },
    ]);
    expect(facts.delete("user", "editor")).toBe(true);
    expect(db.prepare("SELECT count(*) AS n FROM fact_history").get()).toEqual({ n: 0 });
    expect(db.prepare("SELECT count(*) AS n FROM fact_tags").get()).toEqual({ n: 0 });
    db.close();
  });

  it("lists by scope and category; finds on_demand facts by any word", () => {
    const { db, facts } = open();
    facts.upsert({ scope: "user", key: "editor", category: "preference", value: "vim" });
    facts.upsert({
      scope: "project:web",
      key: "staging.host",
      category: "environment",
      value: "staging.example.net behind the VPN",
      tags: ["deploy"],
    });
    facts.upsert({
      scope: "project:web",
      key: "deploy.day",
      category: "decision",
      value: "Tuesdays",
      recallPolicy: "always",
    });
    expect(facts.list({ scope: "project:web" }).map((f) => f.key)).toEqual([
      "deploy.day",
      "staging.host",
    ]);
    expect(facts.list({ category: "preference" }).map((f) => f.key)).toEqual(["editor"]);
    expect(facts.search("where is the staging VPN?").map((f) => f.key)).toEqual(["staging.host"]);
    expect(facts.search("deploy").map((f) => f.key)).toEqual(["staging.host"]);
    expect(facts.search("deploy", { scopes: ["user"] })).toEqual([]);
    expect(facts.search('" AND NEAR( *')).toEqual([]);
    expect(facts.always().map((f) => f.key)).toEqual(["deploy.day"]);
    // A changed value is found by its new words only.
    facts.upsert({ scope: "user", key: "editor", category: "preference", value: "emacs" });
    expect(facts.search("vim")).toEqual([]);
    expect(facts.search("emacs").map((f) => f.key)).toEqual(["editor"]);
    db.close();
  });

  it("stores a secret_ref only as a reference and never echoes a refused value", () => {
    const { db, facts } = open();
    const ref = facts.upsert({
      scope: "agent",
      key: "openai.api_key",
      category: "account",
      value: "env:OAI_TOKEN_PROD",
      sensitivity: "secret_ref",
    });
    expect(ref).toMatchObject({ value: null, reference: "env:OAI_TOKEN_PROD" });
    for (const value of [KEY_LIKE, `env:${KEY_LIKE}`, "hunter2", "keychain:has spaces"]) {
      const error = errorOf(() =>
        facts.upsert({
          scope: "agent",
          key: "other",
          category: "account",
          value,
          sensitivity: "secret_ref",
        }),
      );
      expect(isStateError(error, "E_INVALID_ARGUMENT"), value).toBe(true);
      expect(JSON.stringify(error && (error as StateError).toJSON())).not.toContain(value);
    }
    // The index holds a secret_ref's key, never its value, not even a reference.
    expect(facts.search("openai key").map((f) => f.key)).toEqual(["openai.api_key"]);
    expect(facts.search("OAI_TOKEN_PROD")).toEqual([]);
    db.close();
  });

  it("erases earlier plain values when a fact becomes a secret_ref", () => {
    const { db, facts } = open();
    const plain = facts.upsert({
      scope: "agent",
      key: "db.password",
      category: "security",
      value: KEY_LIKE,
    });
    facts.upsert({
      scope: "agent",
      key: "db.password",
      category: "security",
      value: `${KEY_LIKE}x`,
    });
    facts.upsert({
      scope: "agent",
      key: "db.password",
      category: "security",
      value: "vault:kv/db/password",
      sensitivity: "secret_ref",
    });
    const stored = db.prepare("SELECT value FROM fact_history ORDER BY version").all();
    expect(stored).toEqual([{ value: null }, { value: null }]);
    expect(JSON.stringify(facts.history(plain.factId))).not.toContain(KEY_LIKE);
    expect(facts.get("agent", "db.password")).toMatchObject({
      version: 3,
      value: null,
      reference: "vault:kv/db/password",
    });
    db.close();
  });

  it("validates sources, topics and enums", () => {
    const { db, facts, sessionId } = open();
    const base = { scope: "user", key: "k", category: "project" as const, value: "v" };
    const code = (fn: () => unknown) => {
      const error = errorOf(fn);
      return isStateError(error) ? error.code : error?.name;
    };
    expect(code(() => facts.upsert({ ...base, source: { sessionId, eventId: "nope" } }))).toBe(
      "E_NOT_FOUND",
    );
    expect(code(() => facts.upsert({ ...base, sourceTopicId: "nope" }))).toBe("E_NOT_FOUND");
    expect(code(() => facts.upsert({ ...base, category: "hobby" as never }))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(code(() => facts.upsert({ ...base, confidence: 1.5 }))).toBe("E_INVALID_ARGUMENT");
    expect(code(() => facts.upsert({ ...base, recallPolicy: "sometimes" as never }))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(code(() => facts.upsert({ ...base, sensitivty: "secret_ref" } as never))).toBe(
      "TypeError",
    );
    expect(db.prepare("SELECT count(*) AS n FROM facts").get()).toEqual({ n: 0 });
    db.close();
  });

  it("keeps a fact when its source session is deleted, without the dangling pointer", () => {
    const { db, stores, facts, sessionId, eventId } = open();
    facts.upsert({
      scope: "user",
      key: "editor",
      category: "preference",
      value: "vim",
      source: { sessionId, eventId },
    });
    stores.lifecycle.delete(sessionId);
    expect(facts.get("user", "editor")).toMatchObject({ value: "vim", source: null });
    db.close();
  });
});
