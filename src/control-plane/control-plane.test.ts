import { describe, expect, it } from "vitest";
import { simulatedClock } from "../stores/global/test-support/global-db.js";
import { BACKENDS, rejects, useControlPlanes } from "./test-support/control-planes.js";

// One behaviour on every backend: each test below runs on the embedded SQLite control plane and
// on a real PostgreSQL (a throwaway cluster for this file), and checks rows through a separate
// connection where it matters.

const open = useControlPlanes();
const Q = "outbound-delivery";

describe.each(BACKENDS)("control plane on %s: delivery queue", (backend) => {
  const setup = async (queue = {}) => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now, queue: { leaseMs: 30_000, ...queue } });
    return { ...opened, q: opened.cp.queue, clock };
  };

  it("claims the oldest due entry first, in enqueue order, and settles it as sent on ack", async () => {
    const { q, clock, count } = await setup();
    await q.enqueue(Q, { id: "a", payload: { text: "first" }, channel: "telegram" });
    clock.advance(1);
    await q.enqueue(Q, { id: "b", payload: { text: "second" } });
    await q.enqueue(Q, { id: "c", payload: { text: "same ms as b" } });
    await q.enqueue(Q, { id: "later", payload: 1, availableAt: clock.now() + 60_000 });
    await q.enqueue("other", { id: "a", payload: "other queue, same id" });
    const first = await q.claim(Q, "w1");
    expect(first).toMatchObject({
      id: "a",
      leaseOwner: "w1",
      leaseExpiresAt: clock.now() + 30_000,
      payload: { text: "first" },
      channel: "telegram",
    });
    expect((await q.claim(Q, "w2"))?.id).toBe("b");
    expect((await q.claim(Q, "w3"))?.id).toBe("c");
    expect(await q.claim(Q, "w4")).toBeUndefined();
    expect(await q.counts(Q)).toEqual({ pending: 1, leased: 3, failed: 0 });
    await q.ack(Q, "a", first?.leaseId as string);
    expect(await q.get(Q, "a")).toMatchObject({ status: "sent", settledAt: clock.now() });
    expect(await count("delivery_queue_entries", "id = 'a' AND status = 'sent'")).toBe(1);
    await rejects(q.ack(Q, "a", first?.leaseId as string), "E_CONFLICT", /is sent/);
    expect((await q.get("other", "a"))?.payload).toBe("other queue, same id");
    await rejects(q.enqueue(Q, { id: "b", payload: 1 }), "E_CONFLICT", /already queued/);
    await rejects(q.ack(Q, "nope", "lease"), "E_NOT_FOUND");
  });

  it("makes an entry claimable again when its lease lapses, and fences the old holder out", async () => {
    const { q, clock } = await setup();
    await q.enqueue(Q, { id: "x", payload: "hi" });
    const first = await q.claim(Q, "crashed");
    clock.advance(29_999);
    expect(await q.claim(Q, "other")).toBeUndefined();
    clock.advance(1);
    expect(await q.counts(Q)).toEqual({ pending: 1, leased: 0, failed: 0 });
    const second = await q.claim(Q, "other");
    expect(second?.id).toBe("x");
    const lost = first?.leaseId as string;
    await rejects(q.ack(Q, "x", lost), "E_CONFLICT", /lease lapsed and other holds it now/);
    await rejects(q.fail(Q, "x", lost, "boom"), "E_CONFLICT");
    await rejects(q.extend(Q, "x", lost), "E_CONFLICT");
    const extended = await q.extend(Q, "x", second?.leaseId as string, 90_000);
    expect(extended.leaseExpiresAt).toBe(clock.now() + 90_000);
    clock.advance(60_000);
    expect(await q.claim(Q, "third")).toBeUndefined();
    await q.ack(Q, "x", second?.leaseId as string);
    expect(await q.get(Q, "x")).toMatchObject({ status: "sent", leaseOwner: "other" });
  });

  it("a holder whose lease lapsed may still settle while nobody took the entry over", async () => {
    const { q, clock } = await setup();
    await q.enqueue(Q, { id: "slow", payload: 1 });
    const held = await q.claim(Q, "slow-worker");
    clock.advance(45_000);
    await q.ack(Q, "slow", held?.leaseId as string);
    expect((await q.get(Q, "slow"))?.status).toBe("sent");
  });

  it("retries with exponential backoff and dead-letters after maxAttempts failures", async () => {
    const { q, clock, count } = await setup({
      maxAttempts: 3,
      backoffBaseMs: 1000,
      backoffMaxMs: 1500,
    });
    await q.enqueue(Q, { id: "e", payload: "flaky" });
    let held = await q.claim(Q, "w");
    const once = await q.fail(Q, "e", held?.leaseId as string, "timeout");
    expect(once).toMatchObject({ status: "pending", retryCount: 1, lastError: "timeout" });
    expect(once.availableAt).toBe(clock.now() + 1000);
    expect(await q.claim(Q, "w")).toBeUndefined();
    clock.advance(1000);
    held = await q.claim(Q, "w");
    const twice = await q.fail(Q, "e", held?.leaseId as string, "timeout again");
    // 2 × 1000 capped at backoffMaxMs.
    expect(twice.availableAt).toBe(clock.now() + 1500);
    clock.advance(1500);
    held = await q.claim(Q, "w");
    const dead = await q.fail(Q, "e", held?.leaseId as string, "gone");
    expect(dead).toMatchObject({ status: "failed", retryCount: 3, failedAt: clock.now() });
    clock.advance(3_600_000);
    expect(await q.claim(Q, "w")).toBeUndefined();
    expect(await q.counts(Q)).toEqual({ pending: 0, leased: 0, failed: 1 });
    await q.enqueue(Q, { id: "p", payload: "bad address" });
    held = await q.claim(Q, "w");
    await q.fail(Q, "p", held?.leaseId as string, "no such chat", { permanent: true });
    expect(await count("delivery_queue_entries", "status = 'failed'")).toBe(2);
  });

  it("keeps the backoff finite however many failures came before", async () => {
    const { q, clock } = await setup({
      maxAttempts: 100,
      backoffBaseMs: 86_400_000,
      backoffMaxMs: 2_592_000_000,
    });
    await q.enqueue(Q, { id: "old", payload: 1, retryCount: 60 });
    const held = await q.claim(Q, "w");
    const failed = await q.fail(Q, "old", held?.leaseId as string, "again");
    expect(failed.availableAt).toBe(clock.now() + 2_592_000_000);
  });

  it("lists the queues holding unsettled entries", async () => {
    const { q } = await setup();
    expect(await q.queues()).toEqual([]);
    await q.enqueue("b-queue", { id: "1", payload: {} });
    await q.enqueue(Q, { id: "2", payload: {} });
    const claimed = await q.claim(Q, "w");
    expect(await q.queues()).toEqual(["b-queue", Q]);
    await q.ack(Q, "2", claimed?.leaseId as string);
    expect(await q.queues()).toEqual(["b-queue"]);
  });

  it("enqueues idempotently per queue and key", async () => {
    const { q, count } = await setup();
    const first = await q.enqueue(Q, { id: "r1", payload: "reply", idempotencyKey: "turn-7" });
    const again = await q.enqueue(Q, { id: "r2", payload: "reply", idempotencyKey: "turn-7" });
    expect(again.id).toBe("r1");
    expect(again.enqueuedAt).toBe(first.enqueuedAt);
    const held = await q.claim(Q, "w");
    await q.ack(Q, "r1", held?.leaseId as string);
    // Settled: its key still keeps a re-run turn from queueing the reply again.
    expect((await q.enqueue(Q, { payload: "reply", idempotencyKey: "turn-7" })).status).toBe(
      "sent",
    );
    expect((await q.enqueue("other", { payload: "x", idempotencyKey: "turn-7" })).queue).toBe(
      "other",
    );
    expect(await count("delivery_queue_entries", `queue_name = '${Q}'`)).toBe(1);
  });

  it("waitForWork answers at once when work is due, wakes on an enqueue, and times out", async () => {
    const { cp, another } = await setup();
    const real = await another({ clock: Date.now });
    expect(await real.queue.waitForWork("idle", 50)).toBe(false);
    await real.queue.enqueue("due", { payload: 1 });
    expect(await real.queue.waitForWork("due", 5_000)).toBe(true);
    // The enqueue comes from another control plane: a NOTIFY on PostgreSQL, the process's signal
    // for that home on SQLite.
    const producer = await another({ clock: Date.now });
    const started = Date.now();
    const waiting = real.queue.waitForWork("wake", 10_000);
    setTimeout(() => void producer.queue.enqueue("wake", { payload: 2 }), 100);
    expect(await waiting).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    await real.queue.enqueue("soon", { payload: 3, availableAt: Date.now() + 150 });
    expect(await real.queue.waitForWork("soon", 5_000)).toBe(true);
    expect(cp.backend).toBe(backend);
  });
});

describe.each(BACKENDS)("control plane on %s: agent leases", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    return { ...opened, leases: opened.cp.leases, clock };
  };

  it("wins an unowned agent at epoch 1 and refuses it to another host, naming the owner", async () => {
    const { leases, clock } = await setup();
    expect(await leases.acquire("main", "host-a", 10_000)).toEqual({
      agentId: "main",
      host: "host-a",
      epoch: 1,
      expiresAt: clock.now() + 10_000,
    });
    const refused = await rejects(
      leases.acquire("main", "host-b", 10_000),
      "E_NOT_OWNER",
      /host-a/,
    );
    expect(refused.details).toMatchObject({ owner: "host-a", epoch: 1 });
    clock.advance(5_000);
    // Its own live lease again: a renewal, same epoch.
    expect(await leases.acquire("main", "host-a", 10_000)).toMatchObject({
      epoch: 1,
      expiresAt: clock.now() + 10_000,
    });
    expect(await leases.owner("main")).toMatchObject({ host: "host-a", epoch: 1 });
    expect(await leases.owner("nobody")).toBeUndefined();
  });

  it("lets another host win an expired lease with the next epoch", async () => {
    const { leases, clock, count } = await setup();
    await leases.acquire("main", "host-a", 10_000);
    clock.advance(9_999);
    await rejects(leases.acquire("main", "host-b", 10_000), "E_NOT_OWNER");
    clock.advance(1);
    expect(await leases.owner("main")).toBeUndefined();
    expect(await leases.acquire("main", "host-b", 10_000)).toMatchObject({
      host: "host-b",
      epoch: 2,
    });
    expect(
      await count("agent_leases", "agent_id = 'main' AND owner_host = 'host-b' AND epoch = 2"),
    ).toBe(1);
    // The old owner's release finds the agent gone: nothing changes.
    expect(await leases.release("main", "host-a", 1)).toBe(false);
    expect(await leases.owner("main")).toMatchObject({ host: "host-b" });
  });

  it("renews all of a host's leases in one call, and only its own", async () => {
    const { leases, clock } = await setup();
    await leases.acquire("a1", "host-a", 1_000);
    await leases.acquire("a2", "host-a", 1_000);
    await leases.acquire("b1", "host-b", 1_000);
    clock.advance(900);
    const renewed = await leases.renew("host-a", 5_000);
    expect(renewed.map((l) => l.agentId).sort()).toEqual(["a1", "a2"]);
    expect(renewed.every((l) => l.expiresAt === clock.now() + 5_000 && l.epoch === 1)).toBe(true);
    clock.advance(200);
    expect(await leases.owner("a1")).toMatchObject({ host: "host-a" });
    expect(await leases.owner("b1")).toBeUndefined();
    expect(await leases.renew("host-c", 5_000)).toEqual([]);
  });

  it("takes a host's replica reports for the leases it holds under their epochs, and lists every row", async () => {
    const { leases, clock, count } = await setup();
    await leases.acquire("a1", "host-a", 1_000);
    await leases.acquire("a2", "host-a", 60_000);
    await leases.acquire("b1", "host-b", 60_000);
    clock.advance(1_000); // a1 lapses; host-b wins it under epoch 2.
    await leases.acquire("a1", "host-b", 60_000);
    const took = await leases.report("host-a", [
      { agentId: "a1", epoch: 1, lagMs: 5 }, // No longer host-a's.
      { agentId: "a2", epoch: 1, lagMs: 1_250 },
      { agentId: "b1", epoch: 1, lagMs: 7 }, // host-b's.
    ]);
    expect(took).toBe(1);
    expect(await count("agent_leases", "replica_lag_ms IS NOT NULL")).toBe(1);
    expect(await leases.report("host-a", [])).toBe(0);
    await leases.release("b1", "host-b", 1);
    const now = clock.now();
    expect(await leases.list()).toEqual([
      {
        agentId: "a1",
        host: "host-b",
        epoch: 2,
        expiresAt: now + 60_000,
        live: true,
        acquiredAt: now,
        replicaLagMs: null,
        replicaCheckedAt: null,
      },
      {
        agentId: "a2",
        host: "host-a",
        epoch: 1,
        expiresAt: now - 1_000 + 60_000,
        live: true,
        acquiredAt: now - 1_000,
        replicaLagMs: 1_250,
        replicaCheckedAt: now,
      },
      {
        agentId: "b1",
        host: null,
        epoch: 1,
        expiresAt: now,
        live: false,
        acquiredAt: now - 1_000,
        replicaLagMs: null,
        replicaCheckedAt: null,
      },
    ]);
    await rejects(
      leases.report("host-a", [{ agentId: "a2", epoch: 1, lagMs: -1 }]),
      "E_INVALID_ARGUMENT",
    );
  });

  it("releases a lease so that the next host wins at once, with the next epoch", async () => {
    const { leases } = await setup();
    const held = await leases.acquire("main", "host-a", 60_000);
    expect(await leases.release("main", "host-a", held.epoch)).toBe(true);
    expect(await leases.owner("main")).toBeUndefined();
    expect(await leases.acquire("main", "host-b", 60_000)).toMatchObject({ epoch: 2 });
    expect(await leases.renew("host-a", 60_000)).toEqual([]);
  });

  it("fences writes made for an agent: E_LEASE_LOST and nothing written once the epoch moved on", async () => {
    const { cp, leases, clock, count } = await setup();
    const a = await leases.acquire("main", "host-a", 10_000);
    const fence = { agentId: "main", epoch: a.epoch };
    await cp.queue.enqueue(Q, { id: "ok", payload: 1, agentId: "main" }, { fence });
    clock.advance(10_000);
    await leases.acquire("main", "host-b", 10_000);
    const lost = await rejects(
      cp.queue.enqueue(Q, { id: "late", payload: 2, agentId: "main" }, { fence }),
      "E_LEASE_LOST",
      /epoch 1 refused/,
    );
    expect(lost.details).toMatchObject({
      agentId: "main",
      epoch: 1,
      currentEpoch: 2,
      owner: "host-b",
    });
    await rejects(
      cp.queue.enqueue(Q, { payload: 3 }, { fence: { agentId: "never-leased", epoch: 1 } }),
      "E_LEASE_LOST",
    );
    expect(await count("delivery_queue_entries", "id = 'late'")).toBe(0);
    expect(await count("delivery_queue_entries")).toBe(1);
    // The current epoch still writes; an idempotent re-enqueue under it returns the entry.
    const b = { agentId: "main", epoch: 2 };
    await cp.queue.enqueue(Q, { id: "new", payload: 4, idempotencyKey: "k" }, { fence: b });
    expect((await cp.queue.enqueue(Q, { payload: 4, idempotencyKey: "k" }, { fence: b })).id).toBe(
      "new",
    );
  });
});
