import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { isStateError } from "../db/errors.js";
import { FlowStore } from "../stores/global/flow-store.js";
import { FLOW_STATUSES, type FlowStatus } from "../stores/global/task-states.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneFlows } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same, storedRows } from "./test-support/parity.js";

// Task flows on every backend, as control-plane-subagents.test.ts does subagent runs: each test
// runs on the embedded SQLite control plane and on a real PostgreSQL, with FlowStore on its own
// SQLite database as the oracle of parity, and rows read back through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Flows = ControlPlaneFlows | FlowStore;

const ROWS = "SELECT * FROM flow_runs ORDER BY flow_id";

const stored = (backend: Backend, where: string) =>
  storedRows(backend, where, ROWS, { bigints: ["created_at", "updated_at", "ended_at"] });

function oracleRows(db: Database) {
  return db.prepare(ROWS).all();
}

describe.each(BACKENDS)("control plane on %s: flows", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const store = new FlowStore(db, { clock: clock.now });
    return { ...opened, flows: opened.cp.flows, clock, store, db };
  };

  it("creates, moves, updates, lists and deletes flows exactly as FlowStore does", async () => {
    const { flows, store, clock, db, where } = await setup();
    await same(flows, store, (f) => f.create({ flowId: "f1", ownerKey: "o1", goal: "ship" }));
    await same(flows, store, (f) =>
      f.create({
        flowId: "f2",
        ownerKey: "o1",
        goal: "é😀",
        status: "waiting",
        currentStep: "step 1",
        createdAt: 5,
        record: { wait: { until: 9 }, list: [1, null, "x"] },
      }),
    );
    await same(flows, store, (f) =>
      f.create({ flowId: "f3", ownerKey: "o2", goal: "done", status: "succeeded" }),
    );
    await same(flows, store, (f) => f.create({ flowId: "f1", ownerKey: "o9", goal: "again" }));
    clock.advance(7);
    await same(flows, store, (f) => f.transition("f1", "running", { currentStep: "a" }));
    await same(flows, store, (f) => f.update("f1", { record: { k: 1 }, expectedRevision: 2 }));
    await same(flows, store, (f) => f.update("f1", { record: { j: 2 }, expectedRevision: 2 }));
    await same(flows, store, (f) => f.update("f1", { currentStep: null }));
    await same(flows, store, (f) => f.transition("f1", "queued"));
    await same(flows, store, (f) => f.transition("f2", "blocked", { record: { why: "x" } }));
    clock.advance(3);
    await same(flows, store, (f) => f.transition("f2", "failed", { expectedRevision: 2 }));
    await same(flows, store, (f) => f.transition("f2", "running"));
    await same(flows, store, (f) => f.update("f3", { currentStep: "late" }));
    await same(flows, store, (f) => f.transition("missing", "running"));
    await same(flows, store, (f) => f.update("missing", {}));
    for (const id of ["f1", "f2", "f3", "missing"]) await same(flows, store, (f) => f.get(id));
    for (const status of FLOW_STATUSES) {
      await same(flows, store, (f) => f.listByStatus(status));
    }
    await same(flows, store, (f) => f.listByOwner("o1"));
    await same(flows, store, (f) => f.listByOwner("o1", { limit: 1 }));
    await same(flows, store, (f) => f.listByOwner("nobody"));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    for (const id of ["f3", "f3", "missing"]) await same(flows, store, (f) => f.delete(id));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    // Without an id, each side makes a fresh UUID.
    const made = await flows.create({ ownerKey: "o", goal: "g" });
    expect(made.flowId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("refuses the arguments FlowStore refuses, with the same code and message", async () => {
    const { flows, store, db, where } = await setup();
    await same(flows, store, (f) => f.create({ flowId: "f", ownerKey: "o", goal: "g" }));
    const calls: ((f: Flows) => unknown)[] = [
      (f) => f.create({ flowId: "", ownerKey: "o", goal: "g" }),
      (f) => f.create({ flowId: "x".repeat(257), ownerKey: "o", goal: "g" }),
      (f) => f.create({ ownerKey: "", goal: "g" }),
      (f) => f.create({ ownerKey: "o", goal: "g".repeat(64 * 1024 + 1) }),
      (f) => f.create({ ownerKey: "o", goal: "g", status: "done" as never }),
      (f) => f.create({ ownerKey: "o", goal: "g", createdAt: -1 }),
      (f) => f.create({ flowId: "r", ownerKey: "o", goal: "g", record: [] as never }),
      (f) => f.create({ ownerKey: "o", goal: "g", extra: 1 } as never),
      (f) => f.get(""),
      (f) => f.transition("f", "nope" as never),
      (f) => f.transition("", "running"),
      (f) => f.transition("f", "running", { expectedRevision: -1 }),
      (f) => f.transition("f", "running", { expectedRevision: 1.5 }),
      (f) => f.transition("f", "running", { other: 1 } as never),
      (f) => f.update("f", { currentStep: 5 as never }),
      (f) => f.update("f", { record: { big: "x".repeat(300 * 1024) } }),
      (f) => f.delete(4 as never),
      (f) => f.listByStatus("nope" as never),
      (f) => f.listByStatus("queued", { limit: 0 }),
      (f) => f.listByOwner("", {}),
      (f) => f.listByOwner("o", { max: 1 } as never),
    ];
    for (const call of calls) expect(await same(flows, store, call)).not.toHaveProperty("ok");
    expect(await stored(backend, where)).toEqual(oracleRows(db));
  });

  it("gives FlowStore's answers to any sequence of calls (property)", async () => {
    const { flows, store, clock } = await setup();
    let run = 0;
    const id = fc.constantFrom("a", "b", "c");
    const status = fc.constantFrom(...FLOW_STATUSES);
    const revision = fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined });
    const update = fc.record({
      expectedRevision: revision,
      currentStep: fc.option(fc.constantFrom("s1", "s2"), { nil: undefined }),
      record: fc.option(fc.dictionary(fc.constantFrom("x", "y"), fc.integer()), {
        nil: undefined,
      }),
    });
    const clean = (u: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined));
    const command = fc.oneof(
      fc.record({ op: fc.constant("create"), id, status, owner: fc.constantFrom("o1", "o2") }),
      fc.record({ op: fc.constant("transition"), id, status, update }),
      fc.record({ op: fc.constant("update"), id, update }),
      fc.record({ op: fc.constant("delete"), id }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 5 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        const prefix = `r${++run}-`;
        const owner = (o: string) => `${prefix}${o}`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "create") {
            const flow = { flowId: prefix + c.id, ownerKey: owner(c.owner), goal: "g" };
            await same(flows, store, (f) => f.create({ ...flow, status: c.status }));
          } else if (c.op === "transition") {
            const u = clean(c.update);
            await same(flows, store, (f) => f.transition(prefix + c.id, c.status, u));
          } else if (c.op === "update") {
            await same(flows, store, (f) => f.update(prefix + c.id, clean(c.update)));
          } else await same(flows, store, (f) => f.delete(prefix + c.id));
        }
        await same(flows, store, (f) => f.listByOwner(owner("o1")));
        await same(flows, store, (f) => f.listByOwner(owner("o2"), { limit: 2 }));
      }),
      { numRuns: 50 },
    );
  });

  it("lets exactly one of 4 control planes make a transition they race for", async () => {
    const { cp, another, where } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const ends: FlowStatus[] = ["succeeded", "failed", "cancelled", "lost"];
    for (let i = 0; i < 15; i++) {
      const flowId = `race-${i}`;
      await cp.flows.create({ flowId, ownerKey: "o", goal: "g" });
      // queued → running: one host starts it; the others find it running already.
      const starts = await Promise.allSettled(
        hosts.map((host, h) => host.flows.transition(flowId, "running", { record: { h } })),
      );
      expectOneWinner(starts);
      // running → an end: one end stands, whichever host got there first.
      const endings = await Promise.allSettled(
        hosts.map((host, h) => host.flows.transition(flowId, ends[h] as FlowStatus)),
      );
      const won = expectOneWinner(endings);
      const row = (await stored(backend, where)).find((r) => r.flow_id === flowId);
      expect(row).toMatchObject({ status: won.status, revision: 3, ended_at: won.endedAt });
    }
    // Updates without a revision all apply, one after another: none is lost.
    await cp.flows.create({ flowId: "shared", ownerKey: "o", goal: "g" });
    await Promise.all(
      hosts.map(async (host, h) => {
        for (let n = 0; n < 10; n++)
          await host.flows.update("shared", { record: { [`${h}-${n}`]: n } });
      }),
    );
    const shared = await cp.flows.get("shared");
    expect(shared?.revision).toBe(41);
    expect(Object.keys(shared?.record ?? {}).length).toBe(40);
  });
});

function expectOneWinner<T>(results: PromiseSettledResult<T>[]): T {
  const won = results.filter((r) => r.status === "fulfilled");
  expect(won.length).toBe(1);
  for (const r of results) {
    if (r.status === "rejected")
      expect(isStateError(r.reason, "E_CONFLICT"), String(r.reason)).toBe(true);
  }
  return (won[0] as PromiseFulfilledResult<T>).value;
}
