import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { isStateError } from "../db/errors.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import {
  DeliveryQueueStore,
  type UnknownDecision,
  type UnknownPolicy,
} from "../stores/global/delivery-queue-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import { checkRetention, pruneReceipts, type RetentionOptions } from "../stores/retention.js";
import type { ControlPlaneQueue } from "./control-plane.js";
import {
  BACKENDS,
  type Backend,
  rejects,
  useControlPlanes,
  withClient,
} from "./test-support/control-planes.js";
import { outcome as callOutcome } from "./test-support/parity.js";

// Sends begun, receipts and sends of unknown outcome on every backend, as the other control-plane
// suites do their tables: DeliveryQueueStore on its own SQLite database is the oracle of parity,
// and rows are read back through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Queue = ControlPlaneQueue | DeliveryQueueStore;

/** One side of a comparison: a queue, the lease ids it was given, and its receipt pruning. */
interface Side {
  q: Queue;
  leases: Map<string, string>;
  prune(retention?: RetentionOptions): unknown;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** Lease ids are random per side: each becomes `<lease>` before comparing. */
function normal(value: unknown): unknown {
  return value === undefined ? value : JSON.parse(JSON.stringify(value).replace(UUID, "<lease>"));
}

/** What a call gave (see parity.ts), lease ids made alike. */
async function outcome(call: () => unknown): Promise<unknown> {
  return normal(await callOutcome(call));
}

const ROWS = "SELECT * FROM delivery_queue_entries ORDER BY queue_name, id";
const TIMES = [
  "available_at",
  "last_attempt_at",
  "enqueued_at",
  "updated_at",
  "failed_at",
  "send_started_at",
  "settled_at",
];

/** Every row as stored, read without the code under test, without PostgreSQL's `seq`. */
async function storedRows(backend: Backend, where: string): Promise<unknown> {
  if (backend === "sqlite") {
    const raw = openRawSqlite(join(where, "state", "state.sqlite"), { readonly: true });
    try {
      return normal(raw.prepare(ROWS).all());
    } finally {
      raw.close();
    }
  }
  const { rows } = await withClient(where, (client) => client.query(ROWS));
  return normal(
    rows.map(({ seq: _seq, ...row }: Record<string, unknown>) => {
      for (const column of TIMES) if (row[column] !== null) row[column] = Number(row[column]);
      return row;
    }),
  );
}

function oracleRows(db: Database): unknown {
  return normal(db.prepare(ROWS).all());
}

/** Claims on a side, remembering the lease id it was given. */
async function claim(s: Side, queue: string, leaseMs = 1_000) {
  const claimed = await s.q.claim(queue, "worker", { leaseMs });
  if (claimed) s.leases.set(`${queue}/${claimed.id}`, claimed.leaseId);
  return claimed;
}

function lease(s: Side, queue: string, id: string): string {
  return s.leases.get(`${queue}/${id}`) ?? "00000000-0000-4000-8000-000000000000";
}

describe.each(BACKENDS)("control plane on %s: delivery receipts", (backend) => {
  const setup = async (onUnknown?: UnknownPolicy) => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now, queue: { onUnknown } });
    const db = openDb();
    const store = new DeliveryQueueStore(db, { clock: clock.now, onUnknown });
    const cpSide: Side = {
      q: opened.cp.queue,
      leases: new Map(),
      prune: (r) => opened.cp.queue.pruneReceipts(r),
    };
    const oracle: Side = {
      q: store,
      leases: new Map(),
      prune: (r) => pruneReceipts(db, checkRetention(r), clock.now()),
    };
    /** The same call on the control plane and on the oracle: same value or same refusal. */
    const same = async (call: (s: Side) => unknown) => {
      const got = await outcome(() => call(cpSide));
      expect(got).toEqual(await outcome(() => call(oracle)));
      return got;
    };
    const sameRows = async () =>
      expect(await storedRows(backend, opened.where)).toEqual(oracleRows(db));
    return { ...opened, clock, same, sameRows, store };
  };

  it("begins sends, settles receipts and refuses what the store refuses, exactly as DeliveryQueueStore", async () => {
    const { same, sameRows, clock } = await setup();
    for (const id of ["e1", "e2", "e3", "e4"]) {
      const entry = { id, payload: { text: `reply ${id}` }, sessionKey: "agent:main:main" };
      await same((s) => s.q.enqueue("out", { ...entry, agentId: "main", idempotencyKey: id }));
      clock.advance(1);
    }
    for (let i = 0; i < 3; i++) await same((s) => claim(s, "out"));
    await same((s) => s.q.beginSend("out", "e1", lease(s, "out", "e1")));
    await same((s) => s.q.beginSend("out", "e1", lease(s, "out", "e1"))); // begun already
    await same((s) => s.q.beginSend("out", "e2", lease(s, "out", "e1"))); // not its lease
    await same((s) => s.q.beginSend("out", "nope", lease(s, "out", "e1")));
    await same((s) => s.q.beginSend("", "e1", lease(s, "out", "e1")));
    await same((s) => s.q.settle("out", "e1", lease(s, "out", "e1"), { platformMessageId: "m1" }));
    await same((s) => s.q.settle("out", "e1", lease(s, "out", "e1"))); // settled already
    await same((s) => s.q.settle("out", "e2", lease(s, "out", "e2"), { bogus: 1 } as never));
    await same((s) =>
      s.q.settle("out", "e2", lease(s, "out", "e2"), { platformMessageId: 5 } as never),
    );
    await same((s) => s.q.settle("out", "e2", lease(s, "out", "e2")));
    await same((s) => s.q.enqueue("out", { id: "e9", payload: 1, idempotencyKey: "e1" }));
    await same((s) => s.q.beginSend("out", "e3", lease(s, "out", "e3")));
    clock.advance(2_000); // e3's lease lapses during its send
    await same((s) => s.q.beginSend("out", "e4", lease(s, "out", "e4"))); // lapsed before the send
    await same((s) => s.q.extend("out", "e3", lease(s, "out", "e3")));
    await same((s) => s.q.get("out", "e3"));
    await same((s) => claim(s, "out")); // e4 again, never e3
    for (const status of [undefined, "sent", "unknown", "pending", "bogus"] as const) {
      await same((s) => s.q.receipts({ sessionKey: "agent:main:main", status: status as never }));
    }
    await same((s) => s.q.receipts({ agentId: "main", queue: "out", limit: 2 }));
    await same((s) => s.q.receipts({ conversationId: "c1" }));
    await same((s) => s.q.receipts({ queue: "out" }));
    await same((s) => s.q.receipts({ agentId: "main", extra: 1 } as never));
    await sameRows();
  });

  it("queues a delivery for a known conversation and refuses an unknown one, as SQLite's key does", async () => {
    const { cp, count } = await setup();
    const { conversationId } = await cp.conversations.resolve({
      channel: "telegram",
      peerId: "42",
    });
    const entry = await cp.queue.enqueue("out", { id: "c", payload: 1, conversationId });
    expect(entry.conversationId).toBe(conversationId);
    const found = await cp.queue.receipts({ conversationId });
    expect(found.map((e) => e.id)).toEqual(["c"]);
    await expect(
      cp.queue.enqueue("out", { id: "d", payload: 1, conversationId: "nope" }),
    ).rejects.toMatchObject({ code: "E_CONSTRAINT" });
    expect(await count("delivery_queue_entries")).toBe(1);
  });

  it("lists, resolves and reconciles unknown sends exactly as DeliveryQueueStore", async () => {
    const policy: UnknownPolicy = (entry) =>
      entry.id === "u3" ? "resend" : entry.id === "u4" ? "drop" : "keep";
    const { same, sameRows, clock } = await setup(policy);
    for (const id of ["u1", "u2", "u3", "u4", "u5", "u6"]) {
      await same((s) => s.q.enqueue(id === "u6" ? "other" : "out", { id, payload: [id] }));
    }
    for (let i = 0; i < 5; i++) {
      await same((s) => claim(s, "out"));
      clock.advance(1);
    }
    await same((s) => claim(s, "other"));
    for (const id of ["u1", "u2", "u3", "u4", "u5"]) {
      await same((s) => s.q.beginSend("out", id, lease(s, "out", id)));
    }
    await same((s) => s.q.beginSend("other", "u6", lease(s, "other", "u6")));
    await same((s) => s.q.resolveUnknown("out", "u1", "resend")); // still sending, lease live
    clock.advance(5_000);
    const first = (await same((s) => s.q.listUnknown("out", { limit: 2 }))) as { ok: unknown[] };
    expect(first.ok).toHaveLength(2);
    await same(async (s) => {
      const page = await s.q.listUnknown("out", { limit: 2 });
      return s.q.listUnknown("out", { limit: 2, after: page[1] });
    });
    await same((s) => s.q.listUnknownEverywhere());
    await same((s) => s.q.listUnknownEverywhere({ limit: 0 }));
    await same((s) => s.q.listUnknown("out", { limit: 1, before: 1 } as never));
    const decisions: [string, UnknownDecision][] = [
      ["u1", { sent: true, platformMessageId: "found-1" }],
      ["u1", "resend"], // known now
      ["u2", { drop: "the user left" }],
      ["missing", "drop"],
      ["u5", "bogus" as never],
      ["u5", { sent: true, extra: 1 } as never],
    ];
    for (const [id, decision] of decisions)
      await same((s) => s.q.resolveUnknown("out", id, decision));
    await same((s) => s.q.settle("other", "u6", lease(s, "other", "u6"))); // late holder settles
    await same((s) => s.q.reconcileUnknown("out"));
    await same((s) => s.q.reconcileUnknown("out")); // u5 kept again
    await same((s) => s.q.resolveUnknown("out", "u5", "drop"));
    await same((s) => s.q.counts("out"));
    await same((s) => claim(s, "out")); // u3, resent by the policy
    await sameRows();
  });

  it("prunes receipts by age and count per queue, never unsettled entries, as the SQLite sweep does", async () => {
    const { same, sameRows, clock } = await setup();
    for (const queue of ["a", "b"]) {
      for (let i = 0; i < 6; i++) {
        await same((s) => s.q.enqueue(queue, { id: `${queue}${i}`, payload: i }));
        const claimed = (await same((s) => claim(s, queue))) as { ok?: { id: string } };
        const id = claimed.ok?.id as string;
        if (i % 3 === 0)
          await same((s) => s.q.fail(queue, id, lease(s, queue, id), "no", { permanent: true }));
        else if (i % 3 === 1) await same((s) => s.q.settle(queue, id, lease(s, queue, id)));
        else await same((s) => s.q.beginSend(queue, id, lease(s, queue, id)));
        clock.advance(60_000);
      }
    }
    await same((s) => s.prune({ receiptsMaxAgeMs: 1e9, receiptsPerQueue: 3 }));
    await same((s) => s.prune({ receiptsMaxAgeMs: 4 * 60_000 }));
    await same((s) => s.prune({ receiptsPerQueue: -1 }));
    await same((s) => s.prune({ receiptsMaxAge: 1 } as never));
    await same((s) => s.prune());
    await sameRows();
  });

  it("leaves a lapsed send unknown, never claimable again, on every host, until it is resolved", async () => {
    const { cp, another, clock, where } = await setup();
    const other = await another({ clock: clock.now });
    await cp.queue.enqueue("out", { id: "s", payload: "x" });
    await cp.queue.enqueue("out", { id: "t", payload: "y" });
    const s = await cp.queue.claim("out", "w1", { leaseMs: 1_000 });
    const t = await cp.queue.claim("out", "w1", { leaseMs: 1_000 });
    await cp.queue.beginSend("out", "s", s?.leaseId as string);
    clock.advance(1_000);
    // t's holder died before its send: t is claimable again; s's died during it: s is not.
    const again = await other.queue.claim("out", "w2");
    expect(again?.id).toBe("t");
    await other.queue.settle("out", "t", again?.leaseId as string);
    expect(await other.queue.claim("out", "w2")).toBeUndefined();
    expect(await cp.queue.claim("out", "w1")).toBeUndefined();
    expect((await other.queue.get("out", "s"))?.status).toBe("unknown");
    await rejects(other.queue.beginSend("out", "t", t?.leaseId as string), "E_CONFLICT");
    const statusOf = async () =>
      ((await storedRows(backend, where)) as { id: string; status: string }[]).find(
        (r) => r.id === "s",
      )?.status;
    expect(await statusOf()).toBe("sending"); // reads say unknown; nothing wrote it yet
    expect((await other.queue.reconcileUnknown("out")).kept).toEqual(["s"]);
    expect(await statusOf()).toBe("unknown");
    clock.advance(3_600_000);
    expect(await cp.queue.claim("out", "w1")).toBeUndefined();
    expect((await cp.queue.listUnknownEverywhere()).map((e) => e.id)).toEqual(["s"]);
    await other.queue.resolveUnknown("out", "s", "resend");
    expect((await cp.queue.claim("out", "w1"))?.id).toBe("s");
  });

  it("wakes a host waiting for work when another host puts an unknown send back in line", async () => {
    const { another } = await setup();
    const [waiter, decider] = [
      await another({ clock: Date.now }),
      await another({ clock: Date.now }),
    ];
    await decider.queue.enqueue("out", { id: "w", payload: 1 });
    const held = await decider.queue.claim("out", "w1", { leaseMs: 20 });
    await decider.queue.beginSend("out", "w", held?.leaseId as string);
    await new Promise((resolve) => setTimeout(resolve, 40));
    const started = Date.now();
    const waiting = waiter.queue.waitForWork("out", 10_000);
    setTimeout(() => void decider.queue.resolveUnknown("out", "w", "resend"), 100);
    expect(await waiting).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await waiter.queue.claim("out", "w2"))?.id).toBe("w");
  });

  it("matches the store over random sequences of enqueue, claim, beginSend, settle, fail and lapse", async () => {
    const { same, sameRows, clock } = await setup((e) => (e.retryCount > 0 ? "drop" : "keep"));
    const id = fc.constantFrom("a", "b", "c");
    // Mostly the entry claimed last, so that sequences get past a claim as a gateway's would.
    const target = fc.constantFrom("last", "last", "last", "a", "b", "c");
    const command = fc.oneof(
      { weight: 3, arbitrary: fc.record({ op: fc.constant("enqueue" as const), id }) },
      {
        weight: 3,
        arbitrary: fc.record({
          op: fc.constant("claim" as const),
          leaseMs: fc.integer({ min: 1, max: 3 }),
        }),
      },
      fc.record({ op: fc.constant("beginSend" as const), id: target }),
      fc.record({
        op: fc.constant("settle" as const),
        id: target,
        pm: fc.option(fc.constantFrom("m", "ü"), { nil: undefined }),
      }),
      fc.record({ op: fc.constant("fail" as const), id: target, permanent: fc.boolean() }),
      {
        weight: 2,
        arbitrary: fc.record({
          op: fc.constant("lapse" as const),
          ms: fc.integer({ min: 0, max: 4 }),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          op: fc.constant("resolve" as const),
          id: target,
          decision: fc.constantFrom<UnknownDecision>("resend", "drop", { sent: true }),
        }),
      },
      fc.record({ op: fc.constant("reconcile" as const) }),
    );
    type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;
    let last = "";
    let begun = "";
    const step = async (q: string, c: Command) => {
      const id = "id" in c && c.id === "last" ? last : "id" in c ? c.id : "";
      if (c.op === "enqueue") {
        await same((s) => s.q.enqueue(q, { id: c.id, payload: c.id, idempotencyKey: c.id }));
      } else if (c.op === "claim") {
        const got = (await same((s) => claim(s, q, c.leaseMs))) as { ok?: { id: string } };
        if (got.ok) last = got.ok.id;
      } else if (c.op === "beginSend") {
        const got = await same((s) => s.q.beginSend(q, id, lease(s, q, id)));
        if (tally("beginSend", got)) begun = id;
      } else if (c.op === "settle") {
        const options = { platformMessageId: c.pm };
        tally("settle", await same((s) => s.q.settle(q, id, lease(s, q, id), options)));
      } else if (c.op === "fail") {
        const options = { permanent: c.permanent };
        await same((s) => s.q.fail(q, id, lease(s, q, id), "no", options));
      } else if (c.op === "lapse") clock.advance(c.ms);
      else if (c.op === "resolve") {
        // The send begun last, which a lapse may have made unknown.
        const which = c.id === "last" ? begun : id;
        tally("resolve", await same((s) => s.q.resolveUnknown(q, which, c.decision)));
      } else await same((s) => s.q.reconcileUnknown(q));
    };
    let run = 0;
    const accepted = { beginSend: 0, settle: 0, resolve: 0 };
    const tally = (op: keyof typeof accepted, got: unknown) => {
      const ok = (got as { ok?: unknown }).ok !== undefined;
      if (ok) accepted[op]++;
      return ok;
    };
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 10, maxLength: 40 }), async (commands) => {
        const q = `q${++run}`;
        last = "";
        begun = "";
        for (const c of commands) await step(q, c);
        // Every lease lapses: whatever was begun and not settled is unknown now.
        clock.advance(10);
        await step(q, { op: "resolve", id: "last", decision: "resend" });
        await same((s) => s.q.listUnknown(q));
        await same((s) => s.q.counts(q));
      }),
      { numRuns: 80 },
    );
    // The sequences reached every transition, not only refusals.
    expect(Math.min(accepted.beginSend, accepted.settle, accepted.resolve)).toBeGreaterThan(0);
    await sameRows();
  });

  it("four control planes racing to settle and resolve the same unknown sends: each settled once", async () => {
    const { cp, another, clock, count } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another({ clock: clock.now }))))];
    const ids = Array.from({ length: 30 }, (_, i) => `r${String(i).padStart(2, "0")}`);
    const leases = new Map<string, string>();
    for (const id of ids) await cp.queue.enqueue("out", { id, payload: id });
    for (const _ of ids) {
      const claimed = await cp.queue.claim("out", "holder", { leaseMs: 1_000 });
      leases.set(claimed?.id as string, claimed?.leaseId as string);
      await cp.queue.beginSend("out", claimed?.id as string, claimed?.leaseId as string);
    }
    clock.advance(1_000);
    const decisions: UnknownDecision[] = [
      { sent: true, platformMessageId: "found" },
      "drop",
      "resend",
    ];
    const attempts = ids.flatMap((id) =>
      hosts.map((host, h) =>
        (h === 0
          ? host.queue.settle("out", id, leases.get(id) as string, { platformMessageId: "late" })
          : host.queue.resolveUnknown("out", id, decisions[h - 1] as UnknownDecision)
        ).then(
          (entry) => ({ id, won: entry.status }),
          (error: unknown) => {
            if (!isStateError(error, "E_CONFLICT")) throw error;
            return { id, won: undefined };
          },
        ),
      ),
    );
    const results = await Promise.all(attempts);
    for (const id of ids) expect(results.filter((r) => r.id === id && r.won)).toHaveLength(1);
    const won = (status: string) => results.filter((r) => r.won === status).length;
    expect(await count("delivery_queue_entries", "status = 'sent'")).toBe(won("sent"));
    expect(await count("delivery_queue_entries", "status = 'failed'")).toBe(won("failed"));
    expect(await count("delivery_queue_entries", "status = 'pending'")).toBe(won("pending"));
    expect(await count("delivery_queue_entries", "status IN ('sending', 'unknown')")).toBe(0);
  });
});
