import { describe, expect, it } from "vitest";
import { OUTBOUND_DELIVERY_QUEUE, SESSION_DELIVERY_QUEUE } from "./delivery-queue-rows.js";
import { type DeliveryQueueOptions, DeliveryQueueStore } from "./delivery-queue-store.js";
import { expectStateError, simulatedClock, useGlobalDb } from "./test-support/global-db.js";

const openDb = useGlobalDb();
const Q = OUTBOUND_DELIVERY_QUEUE;

function queue(options: Omit<DeliveryQueueOptions, "clock"> = {}) {
  const clock = simulatedClock();
  const db = openDb();
  return {
    db,
    clock,
    queue: new DeliveryQueueStore(db, { clock: clock.now, leaseMs: 30_000, ...options }),
  };
}

const payload = (text: string) => ({ channel: "telegram", to: "chat-1", payloads: [{ text }] });

describe("DeliveryQueueStore", () => {
  it("claims the oldest due entry with a lease and settles it as sent on ack", () => {
    const { queue: q, clock } = queue();
    q.enqueue(Q, {
      id: "a",
      payload: payload("first"),
      channel: "telegram",
      sessionKey: "agent:main:main",
    });
    clock.advance(1);
    q.enqueue(Q, { id: "b", payload: payload("second") });
    q.enqueue(Q, { id: "later", payload: payload("later"), availableAt: clock.now() + 60_000 });
    q.enqueue(SESSION_DELIVERY_QUEUE, { id: "a", payload: "other queue, same id" });
    const claimed = q.claim(Q, "worker-1");
    expect(claimed).toMatchObject({
      id: "a",
      leaseOwner: "worker-1",
      leaseExpiresAt: clock.now() + 30_000,
      lastAttemptAt: clock.now(),
      payload: payload("first"),
      channel: "telegram",
      sessionKey: "agent:main:main",
    });
    expect(q.claim(Q, "worker-2")?.id).toBe("b");
    expect(q.claim(Q, "worker-3")).toBeUndefined();
    expect(q.counts(Q)).toEqual({ pending: 1, leased: 2, failed: 0 });
    q.ack(Q, "a", claimed?.leaseId as string);
    // ack used to delete the entry; it is kept as a `sent` receipt now, so that its idempotency
    // key still stops a re-run turn from queueing the reply again. A second ack is refused.
    expect(q.get(Q, "a")).toMatchObject({ status: "sent", settledAt: clock.now(), leaseId: null });
    expectStateError(() => q.ack(Q, "a", claimed?.leaseId as string), "E_CONFLICT", /is sent/);
    expect(q.get(SESSION_DELIVERY_QUEUE, "a")?.payload).toBe("other queue, same id");
    expectStateError(() => q.enqueue(Q, { id: "b", payload: 1 }), "E_CONFLICT", /already queued/);
  });

  it("makes an entry claimable again when its lease lapses, and fences the old holder out", () => {
    const { queue: q, clock } = queue();
    q.enqueue(Q, { id: "x", payload: payload("hi") });
    const first = q.claim(Q, "crashed") as NonNullable<ReturnType<typeof q.claim>>;
    clock.advance(29_999);
    expect(q.claim(Q, "other")).toBeUndefined();
    clock.advance(1);
    const second = q.claim(Q, "other");
    expect(second?.id).toBe("x");
    expectStateError(
      () => q.ack(Q, "x", first.leaseId),
      "E_CONFLICT",
      /lease lapsed and other holds it now/,
    );
    expectStateError(() => q.fail(Q, "x", first.leaseId, "boom"), "E_CONFLICT");
    const extended = q.extend(Q, "x", second?.leaseId as string, 90_000);
    expect(extended.leaseExpiresAt).toBe(clock.now() + 90_000);
    clock.advance(60_000);
    expect(q.claim(Q, "third")).toBeUndefined();
    q.ack(Q, "x", second?.leaseId as string);
  });

  it("retries with exponential backoff and dead-letters after maxAttempts failures", () => {
    const { queue: q, clock } = queue({ maxAttempts: 4, backoffBaseMs: 1000, backoffMaxMs: 3000 });
    q.enqueue(Q, { id: "e", payload: payload("flaky") });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const lease = q.claim(Q, "w") as NonNullable<ReturnType<typeof q.claim>>;
      const failed = q.fail(Q, "e", lease.leaseId, `attempt ${attempt} failed`);
      expect(failed).toMatchObject({
        status: "pending",
        retryCount: attempt,
        leaseOwner: null,
        lastError: `attempt ${attempt} failed`,
      });
      delays.push(failed.availableAt - clock.now());
      expect(q.claim(Q, "w")).toBeUndefined();
      clock.set(failed.availableAt);
    }
    expect(delays).toEqual([1000, 2000, 3000]);
    const last = q.claim(Q, "w") as NonNullable<ReturnType<typeof q.claim>>;
    expect(q.fail(Q, "e", last.leaseId, "gave up")).toMatchObject({
      status: "failed",
      retryCount: 4,
      failedAt: clock.now(),
    });
    clock.advance(10 ** 9);
    expect(q.claim(Q, "w")).toBeUndefined();
    expect(q.listFailed(Q).map((e) => [e.id, e.lastError])).toEqual([["e", "gave up"]]);
    expect(q.counts(Q)).toEqual({ pending: 0, leased: 0, failed: 1 });
    expect(q.retry(Q, "e")).toMatchObject({ status: "pending", retryCount: 0, failedAt: null });
    expect(q.claim(Q, "w")?.id).toBe("e");
  });

  it("dead-letters at once on a permanent failure, and pages through dead letters", () => {
    const { queue: q, clock } = queue();
    for (const id of ["p1", "p2", "p3"]) {
      q.enqueue(Q, { id, payload: payload(id) });
      const lease = q.claim(Q, "w") as NonNullable<ReturnType<typeof q.claim>>;
      expect(q.fail(Q, id, lease.leaseId, "chat not found", { permanent: true }).status).toBe(
        "failed",
      );
      clock.advance(1);
    }
    // An error message is kept even when it is not well-formed text.
    expect(q.get(Q, "p1")?.lastError).toBe("chat not found");
    q.enqueue(Q, { id: "odd", payload: 1 });
    const lease = q.claim(Q, "w") as NonNullable<ReturnType<typeof q.claim>>;
    expect(q.fail(Q, "odd", lease.leaseId, "bad \uD800 text").lastError).toBe("bad \uFFFD text");
    q.delete(Q, "odd");
    const first = q.listFailed(Q, { limit: 2 });
    expect(first.map((e) => e.id)).toEqual(["p1", "p2"]);
    expect(q.listFailed(Q, { after: first[1] }).map((e) => e.id)).toEqual(["p3"]);
    expect(q.delete(Q, "p1")).toBe(true);
  });

  it("imports legacy pending and failed entries as they were", () => {
    const { queue: q } = queue();
    const imported = q.enqueue(Q, {
      id: "legacy",
      payload: payload("old"),
      enqueuedAt: 10,
      retryCount: 3,
      lastError: "no listener",
      status: "failed",
    });
    expect(imported).toMatchObject({
      enqueuedAt: 10,
      retryCount: 3,
      lastError: "no listener",
      status: "failed",
    });
    expect(q.claim(Q, "w")).toBeUndefined();
    expect(() => q.enqueue(Q, { payload: 1, delay: 5 } as never)).toThrow(/Unknown option.*delay/);
    expect(() => new DeliveryQueueStore(openDb(), { leaseMs: 0 })).toThrow(/leaseMs/);
  });
});
