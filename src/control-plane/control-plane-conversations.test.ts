import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { ConversationBindingStore } from "../stores/global/conversation-binding-store.js";
import type { Conversation } from "../stores/global/conversation-rows.js";
import { ConversationStore } from "../stores/global/conversation-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type {
  ControlPlaneConversationBindings,
  ControlPlaneConversations,
} from "./control-plane.js";
import { BACKENDS, useControlPlanes } from "./test-support/control-planes.js";
import { outcome, storedRows } from "./test-support/parity.js";

// Conversations and their bindings on every backend, as control-plane-plugin-state.test.ts does
// plugin state: each test runs on the embedded SQLite control plane and on a real PostgreSQL, with
// the SQLite stores on their own database as the oracle, rows read back through a separate
// connection. Conversation ids are random UUIDs, so each side's ids are named c1, c2 … in the order
// that side first shows them: the two sides agree only if they create and return the same rows.

const open = useControlPlanes();
const openDb = useGlobalDb();

interface Side {
  conversations: ControlPlaneConversations | ConversationStore;
  bindings: ControlPlaneConversationBindings | ConversationBindingStore;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Names a side's UUIDs c1, c2 … by first appearance, and turns names back into its UUIDs. */
class Ids {
  private readonly names = new Map<string, string>();
  private readonly uuids = new Map<string, string>();

  name = (value: unknown): unknown => {
    if (typeof value === "string" && UUID.test(value)) {
      if (!this.names.has(value)) {
        const name = `c${this.names.size + 1}`;
        this.names.set(value, name);
        this.uuids.set(name, value);
      }
      return this.names.get(value);
    }
    if (Array.isArray(value)) return value.map(this.name);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.name(v)]));
    }
    return value;
  };

  /** The side's UUID named `name`; an unknown name stands for itself (an id that never was). */
  id = (name: string): string => this.uuids.get(name) ?? name;
}

const CONVERSATIONS =
  "SELECT * FROM conversations ORDER BY channel, account_id, peer_id, thread_id";
const BINDINGS = "SELECT * FROM current_conversation_bindings ORDER BY binding_key";
const BIGINTS: Record<string, string[]> = {
  [CONVERSATIONS]: ["created_at", "last_seen_at"],
  [BINDINGS]: ["bound_at", "expires_at"],
};

describe.each(BACKENDS)("control plane on %s: conversations and bindings", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const subject: Side = {
      conversations: opened.cp.conversations,
      bindings: opened.cp.conversationBindings,
    };
    const oracle: Side = {
      conversations: new ConversationStore(db, { clock: clock.now }),
      bindings: new ConversationBindingStore(db, { clock: clock.now }),
    };
    const ids = { subject: new Ids(), oracle: new Ids() };
    /** The same call on both sides: the same outcome, ids named, expected; returns it. */
    const same = async (call: (side: Side, id: (name: string) => string) => unknown) => {
      const got = ids.subject.name(await outcome(() => call(subject, ids.subject.id)));
      expect(got).toEqual(ids.oracle.name(await outcome(() => call(oracle, ids.oracle.id))));
      return got;
    };
    /** Both tables as stored on each side, read without the code under test, ids named. */
    const sameRows = async () => {
      for (const sql of [CONVERSATIONS, BINDINGS]) {
        const rows = await storedRows(backend, opened.where, sql, { bigints: BIGINTS[sql] });
        expect(ids.subject.name(rows)).toEqual(ids.oracle.name(oracleRows(db, sql)));
      }
    };
    return { ...opened, clock, same, sameRows, db };
  };

  it("resolves, gets and pages conversations exactly as ConversationStore does", async () => {
    const { same, sameRows, clock } = await setup();
    const addresses = [
      { channel: "telegram", peerId: "p1" },
      { channel: "telegram", peerId: "p1", threadId: "t" },
      { channel: "telegram", accountId: "bot", peerId: "p1" },
      { channel: "slack", peerId: "é😀" },
      { channel: "slack", accountId: "", peerId: "x" },
    ];
    for (const address of addresses) {
      await same((s) => s.conversations.resolve(address));
      clock.advance(3);
    }
    // Seen again: same id, later last_seen_at, and the same id for an empty account as for none.
    await same((s) => s.conversations.resolve({ channel: "telegram", peerId: "p1" }));
    clock.advance(1);
    await same((s) => s.conversations.resolve({ channel: "slack", peerId: "x" }));
    clock.set(0);
    await same((s) => s.conversations.resolve({ channel: "slack", peerId: "x" }));
    for (const name of ["c1", "c4", "missing"])
      await same((s, id) => s.conversations.get(id(name)));
    await same((s) => s.conversations.list());
    await same((s) => s.conversations.list({ channel: "telegram", limit: 2 }));
    await same((s) => s.conversations.list({ channel: "nope" }));
    const first = (await same((s) => s.conversations.list({ limit: 2 }))) as { ok: Conversation[] };
    const last = first.ok[1] as Conversation;
    await same((s, id) =>
      s.conversations.list({
        limit: 2,
        before: { ...last, conversationId: id(last.conversationId) },
      }),
    );
    await sameRows();
  });

  it("binds, reads, lists, lapses and unbinds exactly as ConversationBindingStore does", async () => {
    const { same, sameRows, clock } = await setup();
    await same((s) => s.conversations.resolve({ channel: "tg", peerId: "chat" }));
    await same((s) =>
      s.bindings.bind({ channel: "tg", conversationId: "chat", targetSessionKey: "agent:a:1" }),
    );
    await same((s) =>
      s.bindings.bind({
        channel: "tg",
        accountId: "bot",
        conversationId: "chat",
        targetSessionKey: "agent:a:1",
        status: "paused",
        record: { why: ["é", 1, null] },
        ttlMs: 10,
      }),
    );
    await same((s, id) =>
      s.bindings.bind({
        bindingKey: "explicit",
        bindingId: "b-1",
        channel: "tg",
        conversationId: "other",
        targetSessionKey: "agent:a:2",
        boundAt: 5,
        conversationRef: id("c1"),
      }),
    );
    clock.advance(4);
    // Switched: the same key to another session.
    await same((s) =>
      s.bindings.bind({ channel: "tg", conversationId: "chat", targetSessionKey: "agent:a:2" }),
    );
    const reads = [
      (s: Side) => s.bindings.get("tg::chat"),
      (s: Side) => s.bindings.get("tg:bot:chat"),
      (s: Side) => s.bindings.get("missing"),
      (s: Side) => s.bindings.listBySession("agent:a:1"),
      (s: Side) => s.bindings.listBySession("agent:a:2", { limit: 1 }),
      (s: Side, id: (n: string) => string) => s.bindings.listByConversation(id("c1")),
      (s: Side, id: (n: string) => string) => s.bindings.listByConversation(id("c2")),
    ];
    for (const read of reads) await same(read);
    clock.advance(10);
    for (const read of reads) await same(read);
    await sameRows();
    for (const key of ["tg:bot:chat", "tg:bot:chat", "missing"]) {
      await same((s) => s.bindings.unbind(key));
    }
    await sameRows();
  });

  it("refuses the arguments the SQLite stores refuse, with the same code and message", async () => {
    const { same, sameRows } = await setup();
    const bind = { channel: "tg", conversationId: "c", targetSessionKey: "s" };
    const calls: ((s: Side) => unknown)[] = [
      (s) => s.conversations.resolve({ channel: "", peerId: "p" }),
      (s) => s.conversations.resolve({ channel: "x".repeat(257), peerId: "p" }),
      (s) => s.conversations.resolve({ channel: "tg", peerId: "p", extra: 1 } as never),
      (s) => s.conversations.resolve({ channel: "tg", peerId: 5 } as never),
      (s) => s.conversations.get(""),
      (s) => s.conversations.list({ limit: 0 }),
      (s) => s.conversations.list({ channel: 7 } as never),
      (s) => s.conversations.list({ after: "x" } as never),
      (s) => s.bindings.bind({ ...bind, conversationRef: "nope" }),
      (s) => s.bindings.bind({ ...bind, targetSessionKey: "" }),
      (s) => s.bindings.bind({ ...bind, ttlMs: 0 }),
      (s) => s.bindings.bind({ ...bind, status: "s".repeat(65) }),
      (s) => s.bindings.bind({ ...bind, boundAt: -1 }),
      (s) => s.bindings.bind({ ...bind, record: { big: "x".repeat(64 * 1024) } }),
      (s) => s.bindings.bind({ ...bind, record: [] as never }),
      (s) => s.bindings.bind({ ...bind, extra: true } as never),
      (s) => s.bindings.bind({ ...bind, conversationRef: "" }),
      (s) => s.bindings.get(""),
      (s) => s.bindings.unbind(3 as never),
      (s) => s.bindings.listBySession("s", { limit: 1.5 }),
      (s) => s.bindings.listByConversation("", {}),
      (s) => s.bindings.listByConversation("r", { max: 1 } as never),
    ];
    for (const call of calls) expect(await same(call)).not.toHaveProperty("ok");
    // A refused bind leaves nothing behind, not even the conversation it would have resolved.
    await sameRows();
    expect(await same((s) => s.bindings.listBySession("s"))).toEqual({ ok: [] });
  });

  it("gives the SQLite stores' answers to any sequence of calls (property)", async () => {
    const { same, sameRows, clock } = await setup();
    let run = 0;
    const peer = fc.constantFrom("p1", "p2", "p3");
    const session = fc.constantFrom("s1", "s2");
    const command = fc.oneof(
      fc.record({ op: fc.constant("resolve"), peer }),
      fc.record({
        op: fc.constant("bind"),
        peer,
        session,
        key: fc.option(fc.constantFrom("k1", "k2"), { nil: undefined }),
        ttl: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
        ref: fc.option(fc.constantFrom("c1", "c2", "c99"), { nil: undefined }),
      }),
      fc.record({ op: fc.constant("unbind"), key: fc.constantFrom("k1", "k2", "tg::p1") }),
      fc.record({ op: fc.constant("list"), session }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 6 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 20 }), async (commands) => {
        const channel = `ch${++run}`;
        for (const c of commands) {
          // Never two resolves in one ms: lists break ties by the (random) id.
          clock.advance(1);
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "resolve")
            await same((s) => s.conversations.resolve({ channel, peerId: c.peer }));
          else if (c.op === "bind") {
            await same((s, id) =>
              s.bindings.bind({
                channel,
                conversationId: c.peer,
                targetSessionKey: `${channel}:${c.session}`,
                ...(c.key === undefined ? {} : { bindingKey: `${channel}:${c.key}` }),
                ...(c.ttl === undefined ? {} : { ttlMs: c.ttl }),
                ...(c.ref === undefined ? {} : { conversationRef: id(c.ref) }),
              }),
            );
          } else if (c.op === "unbind") await same((s) => s.bindings.unbind(`${channel}:${c.key}`));
          else await same((s) => s.bindings.listBySession(`${channel}:${c.session}`));
        }
        await same((s) => s.conversations.list({ channel }));
      }),
      { numRuns: 40 },
    );
    await sameRows();
  });

  it("leaves one whole binding when two hosts switch it at once, and one id per address", async () => {
    const { cp, another, where } = await setup();
    const hosts = [cp, await another()];
    const rounds = 30;
    for (let i = 0; i < rounds; i++) {
      const written = await Promise.all(
        hosts.map((host, h) =>
          host.conversationBindings.bind({
            bindingKey: "switched",
            bindingId: `b-${h}-${i}`,
            channel: "tg",
            conversationId: `chat-${i}`,
            targetSessionKey: `session-${h}-${i}`,
            record: { host: h, round: i, fill: `${h}:${i}:`.repeat(300) },
          }),
        ),
      );
      const rows = await storedRows(backend, where, BINDINGS, { bigints: BIGINTS[BINDINGS] });
      expect(rows.length).toBe(1);
      const row = rows[0] as Record<string, unknown>;
      // Exactly one host's binding stands, every column of it.
      const winner = written.filter((b) => b.bindingId === row.binding_id);
      expect(winner.length).toBe(1);
      const w = winner[0];
      expect(row.target_session_key).toBe(w?.targetSessionKey);
      expect(JSON.parse(row.record_json as string)).toEqual(w?.record);
      expect(row.conversation_ref).toBe(w?.conversationRef);
      // Both hosts resolved the round's new address to one conversation.
      expect(written[0]?.conversationRef).toBe(written[1]?.conversationRef);
      for (const host of hosts) {
        expect(await host.conversationBindings.get("switched")).toEqual(w);
      }
    }
    const conversations = await storedRows(backend, where, CONVERSATIONS);
    expect(conversations.length).toBe(rounds);
  });
});

function oracleRows(db: Database, sql: string) {
  return db.prepare(sql).all();
}
