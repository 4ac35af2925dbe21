import { describe, expect, it } from "vitest";
import { CommitmentStore } from "./commitment-store.js";
import { ConversationBindingStore } from "./conversation-binding-store.js";
import { SandboxRegistryStore } from "./sandbox-registry-store.js";
import { expectStateError, simulatedClock, useGlobalDb } from "./test-support/global-db.js";
import { TuiSessionStore } from "./tui-session-store.js";

const openDb = useGlobalDb();

function stores() {
  const clock = simulatedClock();
  const db = openDb();
  const options = { clock: clock.now };
  return {
    clock,
    bindings: new ConversationBindingStore(db, options),
    commitments: new CommitmentStore(db, options),
    tui: new TuiSessionStore(db, options),
    sandboxes: new SandboxRegistryStore(db, options),
  };
}

describe("ConversationBindingStore", () => {
  it("binds a conversation to a session, rebinding replaces, and the binding lapses with its TTL", () => {
    const { bindings, clock } = stores();
    const bound = bindings.bind({
      channel: "discord",
      accountId: "bot",
      conversationId: "thread-9",
      targetSessionKey: "agent:main:a",
      ttlMs: 60_000,
    });
    expect(bound).toMatchObject({
      bindingKey: "discord:bot:thread-9",
      bindingId: "discord:bot:thread-9",
      status: "active",
      boundAt: clock.now(),
      expiresAt: clock.now() + 60_000,
    });
    bindings.bind({
      channel: "discord",
      accountId: "bot",
      conversationId: "thread-9",
      targetSessionKey: "agent:main:b",
      ttlMs: 60_000,
    });
    expect(bindings.get("discord:bot:thread-9")?.targetSessionKey).toBe("agent:main:b");
    expect(bindings.listBySession("agent:main:a")).toEqual([]);
    expect(bindings.listBySession("agent:main:b").map((b) => b.conversationId)).toEqual([
      "thread-9",
    ]);
    clock.advance(60_000);
    expect(bindings.get("discord:bot:thread-9")).toBeUndefined();
    expect(bindings.listBySession("agent:main:b")).toEqual([]);
    bindings.bind({
      bindingKey: "k",
      channel: "telegram",
      conversationId: "c",
      targetSessionKey: "s",
      record: { threadId: 3 },
    });
    expect(bindings.get("k")?.record).toEqual({ threadId: 3 });
    expect(bindings.unbind("k")).toBe(true);
    expect(bindings.unbind("k")).toBe(false);
  });
});

describe("CommitmentStore", () => {
  it("upserts commitments, lists what is due and moves their status", () => {
    const { commitments, clock } = stores();
    const now = clock.now();
    const base = { agentId: "main", sessionKey: "agent:main:main", channel: "telegram" };
    commitments.upsert({
      ...base,
      id: "c1",
      dueEarliestAt: now - 1000,
      dueLatestAt: now + 1000,
      record: { text: "remind about rent" },
    });
    commitments.upsert({ ...base, id: "c2", dueEarliestAt: now + 5000, dueLatestAt: now + 9000 });
    commitments.upsert({
      ...base,
      id: "c3",
      dueEarliestAt: now - 5000,
      dueLatestAt: now,
      status: "snoozed",
    });
    expect(commitments.listDue(now).map((c) => c.id)).toEqual(["c1"]);
    expect(commitments.listDue(now + 5000).map((c) => c.id)).toEqual(["c1", "c2"]);
    expect(commitments.setStatus("c1", "sent")).toMatchObject({ status: "sent", updatedAt: now });
    expect(commitments.listDue(now).map((c) => c.id)).toEqual([]);
    expect(commitments.listBySession("main", "agent:main:main").map((c) => c.id)).toEqual([
      "c3",
      "c1",
      "c2",
    ]);
    expect(commitments.get("c1")?.record).toEqual({ text: "remind about rent" });
    expectStateError(() => commitments.setStatus("c1", "done" as never), "E_INVALID_ARGUMENT");
    expectStateError(
      () => commitments.upsert({ ...base, id: "bad", dueEarliestAt: 10, dueLatestAt: 5 }),
      "E_INVALID_ARGUMENT",
      /before/,
    );
    expectStateError(() => commitments.setStatus("missing", "sent"), "E_NOT_FOUND");
    expect(commitments.delete("c2")).toBe(true);
  });
});

describe("TuiSessionStore and SandboxRegistryStore", () => {
  it("remember the last TUI session per scope", () => {
    const { tui, clock } = stores();
    tui.set("workspace:/home/me/app", "agent:main:main");
    clock.advance(5);
    expect(tui.set("workspace:/home/me/app", "agent:main:other")).toEqual({
      scopeKey: "workspace:/home/me/app",
      sessionKey: "agent:main:other",
      updatedAt: clock.now(),
    });
    expect(tui.get("workspace:/home/me/app")?.sessionKey).toBe("agent:main:other");
    expect(tui.delete("workspace:/home/me/app")).toBe(true);
    expect(tui.get("workspace:/home/me/app")).toBeUndefined();
  });

  it("keeps one row per sandbox container, most recently updated first", () => {
    const { sandboxes, clock } = stores();
    sandboxes.put("containers", "oc-sbx-1", {
      image: "openclaw-sandbox",
      sessionKey: "agent:main:main",
    });
    clock.advance(1);
    sandboxes.put("containers", "oc-sbx-2", { image: "openclaw-sandbox" });
    sandboxes.put("browsers", "oc-br-1", { cdpPort: 9222 });
    expect(sandboxes.list("containers").map((e) => e.containerName)).toEqual([
      "oc-sbx-2",
      "oc-sbx-1",
    ]);
    expect(sandboxes.get("browsers", "oc-br-1")?.entry).toEqual({ cdpPort: 9222 });
    expect(sandboxes.delete("containers", "oc-sbx-1")).toBe(true);
    expectStateError(() => sandboxes.put("containers", "x", [] as never), "E_INVALID_ARGUMENT");
  });
});
