import { describe, expect, it } from "vitest";
import type { Database } from "../../db/database.js";
import { ConversationStore } from "./conversation-store.js";
import { OUTBOUND_DELIVERY_QUEUE, SESSION_DELIVERY_QUEUE } from "./delivery-queue-rows.js";
import { QUEUE_SQL } from "./delivery-queue-sql.js";
import {
  type ClaimedDelivery,
  type DeliveryQueueOptions,
  DeliveryQueueStore,
} from "./delivery-queue-store.js";
import {
  expectStateError,
  rowCount,
  simulatedClock,
  useGlobalDb,
} from "./test-support/global-db.js";

const openDb = useGlobalDb();
const Q = OUTBOUND_DELIVERY_QUEUE;
const LEASE = 30_000;

function setup(options: Omit<DeliveryQueueOptions, "clock"> = {}) {
  const clock = simulatedClock();
  const db = openDb();
  const q = new DeliveryQueueStore(db, { clock: clock.now, leaseMs: LEASE, ...options });
  const claim = () => q.claim(Q, "gateway") as ClaimedDelivery;
  return { db, clock, q, claim };
}

interface RawEntry {
  id: string;
  status: string;
  send_started_at: number | null;
  settled_at: number | null;
  platform_message_id: string | null;
  lease_id: string | null;
  last_error: string | null;
}

/** The row as stored, read with plain SQL: the oracle the store's mapping is checked against. */
function raw(db: Database, id: string, queue = Q): RawEntry | undefined {
  return db
    .prepare<RawEntry>(
      `SELECT id, status, send_started_at, settled_at, platform_message_id, lease_id, last_error
       FROM delivery_queue_entries WHERE queue_name = ? AND id = ?`,
    )
    .get(queue, id);
}

/** Enqueues `id`, claims it and begins its send; returns the claim. */
function begun(q: DeliveryQueueStore, id: string): ClaimedDelivery {
  q.enqueue(Q, { id, payload: { text: id } });
  const lease = q.claim(Q, `holder-${id}`) as ClaimedDelivery;
  expect(lease.id).toBe(id);
  q.beginSend(Q, id, lease.leaseId);
  return lease;
}

describe("delivery receipts: idempotent enqueue", () => {
  it("returns the stored entry for a known key, before and after it was sent", () => {
    const { db, clock, q, claim } = setup();
    const first = q.enqueue(Q, { id: "r1", idempotencyKey: "turn-7:reply", payload: { n: 1 } });
    clock.advance(5);
    const again = q.enqueue(Q, { idempotencyKey: "turn-7:reply", payload: { n: 2 } });
    expect(again).toEqual(first);
    expect(rowCount(db, "delivery_queue_entries")).toBe(1);
    const lease = claim();
    q.settle(Q, "r1", lease.leaseId, { platformMessageId: "tg-42" });
    clock.advance(60_000);
    // The turn re-runs after a crash: its reply is already delivered, and is not queued again.
    const afterSend = q.enqueue(Q, { idempotencyKey: "turn-7:reply", payload: { n: 3 } });
    expect(afterSend).toMatchObject({ id: "r1", status: "sent", platformMessageId: "tg-42" });
    expect(afterSend.payload).toEqual({ n: 1 });
    expect(rowCount(db, "delivery_queue_entries")).toBe(1);
    expect(q.claim(Q, "gateway")).toBeUndefined();
    // Keys are per queue; entries without a key never collide on it.
    q.enqueue(SESSION_DELIVERY_QUEUE, { idempotencyKey: "turn-7:reply", payload: 1 });
    q.enqueue(Q, { payload: 1 });
    q.enqueue(Q, { payload: 2 });
    expect(rowCount(db, "delivery_queue_entries")).toBe(4);
    // A duplicate id under a new key is still refused.
    expectStateError(
      () => q.enqueue(Q, { id: "r1", idempotencyKey: "other", payload: 1 }),
      "E_CONFLICT",
    );
  });
});

describe("delivery receipts: send transitions", () => {
  it("records beginSend before the platform call and settles with the platform's message id", () => {
    const { db, clock, q, claim } = setup();
    q.enqueue(Q, { id: "m", payload: { text: "hi" } });
    const lease = claim();
    clock.advance(10);
    const sending = q.beginSend(Q, "m", lease.leaseId);
    expect(sending).toMatchObject({ status: "sending", sendStartedAt: clock.now() });
    expect(raw(db, "m")).toMatchObject({ status: "sending", send_started_at: clock.now() });
    expectStateError(() => q.beginSend(Q, "m", lease.leaseId), "E_CONFLICT", /it is sending/);
    expect(() => db.tx(() => q.beginSend(Q, "m", lease.leaseId))).toThrow(/outside a transaction/);
    expect(q.counts(Q)).toEqual({ pending: 0, leased: 1, failed: 0 });
    clock.advance(20);
    const sent = q.settle(Q, "m", lease.leaseId, { platformMessageId: "msg-1" });
    expect(sent).toMatchObject({
      status: "sent",
      settledAt: clock.now(),
      platformMessageId: "msg-1",
    });
    expect(raw(db, "m")).toMatchObject({
      status: "sent",
      settled_at: clock.now(),
      platform_message_id: "msg-1",
      lease_id: null,
    });
    expectStateError(() => q.settle(Q, "m", lease.leaseId), "E_CONFLICT", /it is sent/);
    expectStateError(() => q.fail(Q, "m", lease.leaseId, "late"), "E_CONFLICT");
  });

  it("treats a failure after beginSend as an ordinary failure: retried after backoff", () => {
    const { db, clock, q, claim } = setup({ backoffBaseMs: 1000 });
    q.enqueue(Q, { id: "f", payload: 1 });
    const lease = claim();
    q.beginSend(Q, "f", lease.leaseId);
    const failed = q.fail(Q, "f", lease.leaseId, "403 bot was blocked");
    expect(failed).toMatchObject({ status: "pending", retryCount: 1, sendStartedAt: null });
    expect(raw(db, "f")).toMatchObject({ status: "pending", send_started_at: null });
    expect(q.claim(Q, "gateway")).toBeUndefined();
    clock.advance(1000);
    const again = claim();
    expect(again.id).toBe("f");
    q.beginSend(Q, "f", again.leaseId);
    expect(q.fail(Q, "f", again.leaseId, "chat gone", { permanent: true }).status).toBe("failed");
    expect(q.listFailed(Q).map((e) => e.id)).toEqual(["f"]);
  });

  it("refuses to begin a send once the lease lapsed, and leaves the entry claimable", () => {
    const { db, clock, q, claim } = setup();
    q.enqueue(Q, { id: "late", payload: 1 });
    const lease = claim();
    clock.advance(LEASE);
    expectStateError(() => q.beginSend(Q, "late", lease.leaseId), "E_CONFLICT", /lapsed/);
    expect(raw(db, "late")?.status).toBe("pending");
    const next = claim();
    expect(next.id).toBe("late");
    expectStateError(() => q.beginSend(Q, "late", lease.leaseId), "E_CONFLICT", /holds it now/);
  });

  it("never hands out sending, sent, unknown or failed entries, however long it waits", () => {
    const { db, clock, q } = setup();
    begun(q, "sending");
    const sent = begun(q, "sent");
    q.settle(Q, "sent", sent.leaseId);
    begun(q, "unknown");
    q.enqueue(Q, { id: "failed", payload: 1, status: "failed" });
    clock.advance(LEASE);
    // Past their lease, "sending" and "unknown" are both of unknown outcome; this one is not.
    begun(q, "still-sending");
    clock.advance(LEASE - 1);
    q.enqueue(Q, { id: "pending", payload: 1 });
    expect(q.claim(Q, "gateway")?.id).toBe("pending");
    clock.advance(10 ** 9);
    expect(q.claim(Q, "gateway")?.id).toBe("pending");
    expect(q.claim(Q, "gateway")).toBeUndefined();
    const statuses = db
      .prepare<{ id: string; status: string }>(
        "SELECT id, status FROM delivery_queue_entries ORDER BY id",
      )
      .all();
    expect(statuses).toEqual([
      { id: "failed", status: "failed" },
      { id: "pending", status: "pending" },
      { id: "sending", status: "sending" },
      { id: "sent", status: "sent" },
      { id: "still-sending", status: "sending" },
      { id: "unknown", status: "sending" },
    ]);
  });
});

describe("delivery receipts: sends of unknown outcome", () => {
  it("makes a begun, unsettled send unknown once its holder's lease lapses", () => {
    const { db, clock, q } = setup();
    const lease = begun(q, "u");
    clock.advance(LEASE - 1);
    expect(q.get(Q, "u")?.status).toBe("sending");
    expect(q.listUnknown(Q)).toEqual([]);
    clock.advance(1);
    expect(q.get(Q, "u")?.status).toBe("unknown");
    expect(q.listUnknown(Q).map((e) => e.id)).toEqual(["u"]);
    expect(q.claim(Q, "other")).toBeUndefined();
    expect(q.counts(Q)).toEqual({ pending: 0, leased: 0, failed: 0 });
    expectStateError(() => q.extend(Q, "u", lease.leaseId), "E_CONFLICT", /unknown/);
    // Reads leave the row alone; reconcile records it, and keeps it by default.
    expect(raw(db, "u")?.status).toBe("sending");
    expect(q.reconcileUnknown(Q)).toEqual({ resent: [], dropped: [], kept: ["u"], changed: [] });
    expect(raw(db, "u")?.status).toBe("unknown");
    expect(q.listUnknown(Q).map((e) => e.id)).toEqual(["u"]);
    expect(q.receipts({ agentId: "x", status: "unknown" })).toEqual([]);
  });

  it("lists the unknown sends of every queue, oldest send first, without recording them", () => {
    const { db, clock, q } = setup();
    begun(q, "first");
    clock.advance(10);
    q.enqueue(SESSION_DELIVERY_QUEUE, { id: "other-queue", payload: {} });
    const held = q.claim(SESSION_DELIVERY_QUEUE, "h") as ClaimedDelivery;
    q.beginSend(SESSION_DELIVERY_QUEUE, "other-queue", held.leaseId);
    clock.advance(10);
    const live = begun(q, "live");
    clock.advance(LEASE - 5); // first and other-queue lapsed; live still runs
    q.extend(Q, "live", live.leaseId);
    expect(q.listUnknownEverywhere().map((e) => [e.queue, e.id, e.status])).toEqual([
      [Q, "first", "unknown"],
      [SESSION_DELIVERY_QUEUE, "other-queue", "unknown"],
    ]);
    expect(q.listUnknownEverywhere({ limit: 1 }).map((e) => e.id)).toEqual(["first"]);
    expect(raw(db, "first")?.status).toBe("sending");
    expect(raw(db, "other-queue", SESSION_DELIVERY_QUEUE)?.status).toBe("sending");
  });

  it("accepts the late holder's settle: it knows what the platform answered", () => {
    const { db, clock, q } = setup();
    const lease = begun(q, "slow");
    clock.advance(LEASE * 2);
    q.reconcileUnknown(Q);
    q.settle(Q, "slow", lease.leaseId, { platformMessageId: "p-9" });
    expect(raw(db, "slow")).toMatchObject({ status: "sent", platform_message_id: "p-9" });
    expect(q.listUnknown(Q)).toEqual([]);
  });

  it("resolves each decision: resend once, drop, drop with a reason, found sent", () => {
    const { db, clock, q } = setup();
    for (const id of ["resend", "drop", "drop-why", "found"]) begun(q, id);
    clock.advance(LEASE);
    expectStateError(() => q.resolveUnknown(Q, "nope", "resend"), "E_NOT_FOUND");
    expectStateError(() => q.resolveUnknown(Q, "found", "again" as never), "E_INVALID_ARGUMENT");

    expect(q.resolveUnknown(Q, "resend", "resend")).toMatchObject({
      status: "pending",
      sendStartedAt: null,
      leaseId: null,
    });
    const again = q.claim(Q, "gateway") as ClaimedDelivery;
    expect(again.id).toBe("resend");
    expect(q.claim(Q, "gateway")).toBeUndefined();
    expectStateError(() => q.resolveUnknown(Q, "resend", "drop"), "E_CONFLICT", /is pending/);

    q.resolveUnknown(Q, "drop", "drop");
    q.resolveUnknown(Q, "drop-why", { drop: "operator said so" });
    expect(raw(db, "drop")).toMatchObject({ status: "failed", lease_id: null });
    expect(raw(db, "drop")?.last_error).toMatch(/^dropped: /);
    expect(raw(db, "drop-why")?.last_error).toBe("dropped: operator said so");
    expect(q.listFailed(Q).map((e) => e.id)).toEqual(["drop", "drop-why"]);

    q.resolveUnknown(Q, "found", { sent: true, platformMessageId: "tg-77" });
    expect(raw(db, "found")).toMatchObject({
      status: "sent",
      settled_at: clock.now(),
      platform_message_id: "tg-77",
    });
    expect(q.listUnknown(Q)).toEqual([]);
    expect(q.claim(Q, "gateway")).toBeUndefined();
  });

  it("applies the onUnknown policy at reconcile, and keeps what the policy keeps", () => {
    const seen: string[] = [];
    const { db, clock, q } = setup({
      onUnknown: (entry) => {
        seen.push(entry.id);
        return entry.id.startsWith("r") ? "resend" : entry.id.startsWith("d") ? "drop" : "keep";
      },
    });
    for (const id of ["r1", "d1", "k1", "r2"]) {
      begun(q, id);
      clock.advance(1);
    }
    begun(q, "live");
    clock.advance(LEASE - 1);
    expect(q.reconcileUnknown(Q)).toEqual({
      resent: ["r1", "r2"],
      dropped: ["d1"],
      kept: ["k1"],
      changed: [],
    });
    expect(seen).toEqual(["r1", "d1", "k1", "r2"]);
    expect(raw(db, "live")?.status).toBe("sending");
    expect(raw(db, "k1")?.status).toBe("unknown");
    expect(raw(db, "d1")?.status).toBe("failed");
    expect([q.claim(Q, "g")?.id, q.claim(Q, "g")?.id, q.claim(Q, "g")]).toEqual([
      "r1",
      "r2",
      undefined,
    ]);
    const bad = new DeliveryQueueStore(db, { clock: clock.now, onUnknown: () => "maybe" as never });
    expect(() => bad.reconcileUnknown(Q)).toThrow(/Expected onUnknown/);
  });
});

describe("delivery receipts: queries", () => {
  it("answers per session, per conversation and per agent, newest first", () => {
    const { db, clock, q } = setup();
    const conversations = new ConversationStore(db, { clock: clock.now });
    const chat = conversations.resolve({ channel: "telegram", peerId: "chat-1" }).conversationId;
    const other = conversations.resolve({ channel: "slack", peerId: "C1" }).conversationId;
    const add = (id: string, sessionKey: string, conversationId: string, agentId = "main") => {
      clock.advance(1);
      return q.enqueue(Q, { id, payload: id, sessionKey, conversationId, agentId });
    };
    add("a1", "agent:main:tg", chat);
    add("a2", "agent:main:tg", chat);
    add("b1", "agent:main:slack", other);
    add("c1", "agent:ops:tg", chat, "ops");
    const lease = q.claim(Q, "g") as ClaimedDelivery;
    q.settle(Q, lease.id, lease.leaseId, { platformMessageId: "tg-1" });
    q.enqueue(Q, { id: "x2", payload: 1, conversationId: chat });

    const ids = (entries: { id: string }[]) => entries.map((e) => e.id);
    expect(ids(q.receipts({ sessionKey: "agent:main:tg" }))).toEqual(["a2", "a1"]);
    expect(ids(q.receipts({ conversationId: chat }))).toEqual(["x2", "c1", "a2", "a1"]);
    expect(ids(q.receipts({ conversationId: chat, agentId: "main" }))).toEqual(["a2", "a1"]);
    expect(ids(q.receipts({ agentId: "ops" }))).toEqual(["c1"]);
    expect(ids(q.receipts({ conversationId: chat, limit: 2 }))).toEqual(["x2", "c1"]);
    expect(q.receipts({ conversationId: chat, status: "sent" })).toMatchObject([
      { id: "a1", status: "sent", platformMessageId: "tg-1" },
    ]);
    expect(ids(q.receipts({ conversationId: other, queue: SESSION_DELIVERY_QUEUE }))).toEqual([]);
    expectStateError(() => q.receipts({ status: "sent" }), "E_INVALID_ARGUMENT");
    expectStateError(
      () => q.receipts({ agentId: "ops", status: "gone" as never }),
      "E_INVALID_ARGUMENT",
    );
    // A conversation id must name a stored conversation.
    expectStateError(() => q.enqueue(Q, { payload: 1, conversationId: "nope" }), "E_CONSTRAINT");
  });

  it("walks indexes: claim skips settled receipts, receipts use their own index", () => {
    const { db } = setup();
    const plan = (sql: string) =>
      db
        .prepare<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
        .all()
        .map((r) => r.detail)
        .join("; ");
    const claim = plan(
      "SELECT rowid FROM delivery_queue_entries WHERE queue_name = 'q' AND status = 'pending' AND available_at <= 5 ORDER BY available_at, rowid LIMIT 1",
    );
    expect(claim).toMatch(/delivery_queue_entries_claimable/);
    const unknown = plan(
      "SELECT * FROM delivery_queue_entries WHERE queue_name = 'q' AND status IN ('sending', 'unknown') AND (status = 'unknown' OR available_at <= 5) ORDER BY send_started_at, id",
    );
    expect(unknown).toMatch(/delivery_queue_entries_in_flight/);
    const everywhere = plan(
      QUEUE_SQL.unknownAnywhere.replaceAll("@now", "5").replaceAll("@limit", "10"),
    );
    expect(everywhere).toMatch(/delivery_queue_entries_in_flight/);
    const counts = plan(QUEUE_SQL.counts.replaceAll("@queue", "'q'").replaceAll("@now", "5"));
    expect(counts).not.toMatch(/SCAN delivery_queue_entries\b(?! USING)/);
    expect(counts).toMatch(/delivery_queue_entries_claimable/);
    expect(counts).toMatch(/delivery_queue_entries_failed/);
    expect(counts).toMatch(/delivery_queue_entries_in_flight/);
    for (const [column, index] of [
      ["conversation_id", "conversation"],
      ["session_key", "session"],
      ["agent_id", "agent"],
    ]) {
      expect(
        plan(
          `SELECT * FROM delivery_queue_entries WHERE ${column} = 'x' ORDER BY enqueued_at DESC`,
        ),
      ).toMatch(new RegExp(`delivery_queue_entries_${index}\\b`));
    }
  });
});
