import { describe, expect, it } from "vitest";
import { ConversationBindingStore } from "./conversation-binding-store.js";
import { ConversationStore } from "./conversation-store.js";
import {
  expectStateError,
  rowCount,
  simulatedClock,
  useGlobalDb,
} from "./test-support/global-db.js";

const openDb = useGlobalDb();

function setup() {
  const clock = simulatedClock();
  const db = openDb();
  return {
    db,
    clock,
    conversations: new ConversationStore(db, { clock: clock.now }),
    bindings: new ConversationBindingStore(db, { clock: clock.now }),
  };
}

describe("ConversationStore", () => {
  it("gives one address one id, and tells apart absent and present account and thread", () => {
    const { db, clock, conversations } = setup();
    const first = conversations.resolve({ channel: "telegram", peerId: "chat-1" });
    clock.advance(1000);
    const again = conversations.resolve({ channel: "telegram", peerId: "chat-1" });
    expect(again.conversationId).toBe(first.conversationId);
    expect(again).toMatchObject({
      accountId: null,
      threadId: null,
      createdAt: first.createdAt,
      lastSeenAt: clock.now(),
    });
    const ids = new Set(
      [
        { channel: "telegram", peerId: "chat-1", accountId: "bot-a" },
        { channel: "telegram", peerId: "chat-1", threadId: "t1" },
        { channel: "telegram", peerId: "chat-1", accountId: "bot-a", threadId: "t1" },
        { channel: "slack", peerId: "chat-1" },
      ].map((address) => conversations.resolve(address).conversationId),
    );
    ids.add(first.conversationId);
    expect(ids.size).toBe(5);
    // Absent parts are stored as '' so that the UNIQUE constraint sees them (NULLs never collide).
    const stored = db
      .prepare<{ n: number }>(
        "SELECT count(*) AS n FROM conversations WHERE account_id = '' AND thread_id = ''",
      )
      .get();
    expect(stored?.n).toBe(2);
    expect(rowCount(db, "conversations")).toBe(5);
    expect(
      conversations.resolve({ channel: "telegram", peerId: "chat-1", threadId: "t1" }),
    ).toEqual(expect.objectContaining({ threadId: "t1", accountId: null }));
    expect(rowCount(db, "conversations")).toBe(5);
  });

  it("gets and lists conversations, most recently seen first, by channel and in pages", () => {
    const { clock, conversations } = setup();
    const a = conversations.resolve({ channel: "telegram", peerId: "a" });
    clock.advance(1);
    const b = conversations.resolve({ channel: "slack", peerId: "b" });
    clock.advance(1);
    const c = conversations.resolve({ channel: "telegram", peerId: "c" });
    clock.advance(1);
    conversations.resolve({ channel: "telegram", peerId: "a" });
    expect(conversations.get(b.conversationId)).toEqual(b);
    expect(conversations.get("missing")).toBeUndefined();
    const ids = (list: { conversationId: string }[]) => list.map((x) => x.conversationId);
    expect(ids(conversations.list())).toEqual([a, c, b].map((x) => x.conversationId));
    expect(ids(conversations.list({ channel: "telegram" }))).toEqual(
      [a, c].map((x) => x.conversationId),
    );
    const page = conversations.list({ limit: 2 });
    expect(ids(conversations.list({ before: page[1] }))).toEqual([b.conversationId]);
    expectStateError(
      () => conversations.resolve({ channel: "telegram", peerId: "" }),
      "E_INVALID_ARGUMENT",
    );
    expect(() => conversations.resolve({ channel: "x", peerId: "y", peer: 1 } as never)).toThrow(
      /Unknown option/,
    );
  });

  it("records in each binding the conversation it was made for", () => {
    const { db, conversations, bindings } = setup();
    const bound = bindings.bind({
      channel: "telegram",
      accountId: "bot-a",
      conversationId: "chat-9",
      targetSessionKey: "agent:main:tg",
    });
    const resolved = conversations.resolve({
      channel: "telegram",
      accountId: "bot-a",
      peerId: "chat-9",
    });
    expect(bound.conversationRef).toBe(resolved.conversationId);
    const thread = conversations.resolve({
      channel: "telegram",
      accountId: "bot-a",
      peerId: "chat-9",
      threadId: "topic-3",
    });
    const threadBinding = bindings.bind({
      bindingKey: "telegram:bot-a:chat-9:topic-3",
      channel: "telegram",
      accountId: "bot-a",
      conversationId: "chat-9",
      conversationRef: thread.conversationId,
      targetSessionKey: "agent:main:topic",
    });
    expect(threadBinding.conversationRef).toBe(thread.conversationId);
    expect(
      bindings.listByConversation(resolved.conversationId).map((b) => b.targetSessionKey),
    ).toEqual(["agent:main:tg"]);
    expectStateError(
      () =>
        bindings.bind({
          channel: "telegram",
          conversationId: "x",
          conversationRef: "no-such",
          targetSessionKey: "s",
        }),
      "E_NOT_FOUND",
    );
    // A binding stored before conversations existed has no reference, and still works.
    db.prepare(
      `INSERT INTO current_conversation_bindings (binding_key, binding_id, channel, account_id,
         conversation_id, target_session_key, status, bound_at, expires_at, record_json)
       VALUES ('old', 'old', 'slack', NULL, 'C1', 'agent:main:old', 'active', 1, NULL, '{}')`,
    ).run();
    expect(bindings.get("old")).toMatchObject({ conversationRef: null, conversationId: "C1" });
    expect(bindings.listBySession("agent:main:old").map((b) => b.bindingKey)).toEqual(["old"]);
    expect(rowCount(db, "conversations")).toBe(2);
  });
});
