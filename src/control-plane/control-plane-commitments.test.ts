import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import {
  COMMITMENT_STATUSES,
  CommitmentStore,
  type NewCommitment,
} from "../stores/global/commitment-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneCommitments } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same, storedRows } from "./test-support/parity.js";

// Commitments on every backend, as control-plane-plugin-state.test.ts does plugin state: each
// test runs on the embedded SQLite control plane and on a real PostgreSQL, with CommitmentStore on
// its own SQLite database as the oracle of parity, and rows read back through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Commitments = ControlPlaneCommitments | CommitmentStore;

const ROWS = "SELECT * FROM commitments ORDER BY id";

const stored = (backend: Backend, where: string) =>
  storedRows(backend, where, ROWS, {
    bigints: ["due_earliest_at", "due_latest_at", "updated_at"],
  });

function oracleRows(db: Database) {
  return db.prepare(ROWS).all();
}

const base = (id: string, due: number): NewCommitment => ({
  id,
  agentId: "a",
  sessionKey: "s",
  channel: "tg",
  dueEarliestAt: due,
  dueLatestAt: due + 10,
});

describe.each(BACKENDS)("control plane on %s: commitments", (backend) => {
  const setup = async () => {
    const clock = simulatedClock(1_000);
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const store = new CommitmentStore(db, { clock: clock.now });
    return { ...opened, commitments: opened.cp.commitments, clock, store, db };
  };

  it("upserts, reads, changes status, lists and deletes exactly as CommitmentStore does", async () => {
    const { commitments, store, clock, db, where } = await setup();
    await same(commitments, store, (c) => c.upsert(base("c2", 500)));
    await same(commitments, store, (c) => c.upsert(base("c1", 500)));
    await same(commitments, store, (c) =>
      c.upsert({ ...base("c3", 2_000), record: { text: "é😀", at: [1, null] } }),
    );
    await same(commitments, store, (c) =>
      c.upsert({ ...base("c4", 100), sessionKey: "other", status: "snoozed" }),
    );
    clock.advance(5);
    await same(commitments, store, (c) => c.upsert({ ...base("c1", 400), channel: "slack" }));
    await same(commitments, store, (c) => c.setStatus("c2", "sent"));
    await same(commitments, store, (c) => c.setStatus("missing", "sent"));
    for (const id of ["c1", "c2", "missing"]) await same(commitments, store, (c) => c.get(id));
    const lists: ((c: Commitments) => unknown)[] = [
      (c) => c.listDue(),
      (c) => c.listDue(3_000),
      (c) => c.listDue(3_000, { limit: 1 }),
      (c) => c.listDue(0),
      (c) => c.listBySession("a", "s"),
      (c) => c.listBySession("a", "s", { limit: 2 }),
      (c) => c.listBySession("a", "other"),
      (c) => c.listBySession("b", "s"),
    ];
    for (const list of lists) await same(commitments, store, list);
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    for (const id of ["c3", "c3", "missing"]) await same(commitments, store, (c) => c.delete(id));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
  });

  it("refuses the arguments CommitmentStore refuses, with the same code and message", async () => {
    const { commitments, store, db, where } = await setup();
    const calls: ((c: Commitments) => unknown)[] = [
      (c) => c.upsert({ ...base("x", 10), dueLatestAt: 5 }),
      (c) => c.upsert({ ...base("", 10) }),
      (c) => c.upsert({ ...base("x", 10), agentId: "a".repeat(257) }),
      (c) => c.upsert({ ...base("x", 10), sessionKey: "" }),
      (c) => c.upsert({ ...base("x", 10), status: "done" as never }),
      (c) => c.upsert({ ...base("x", 10), dueEarliestAt: -1 }),
      (c) => c.upsert({ ...base("x", 10), dueEarliestAt: 1.5 }),
      (c) => c.upsert({ ...base("x", 10), record: { big: "x".repeat(64 * 1024) } }),
      (c) => c.upsert({ ...base("x", 10), record: "text" as never }),
      (c) => c.upsert({ ...base("x", 10), kind: "k" } as never),
      (c) => c.get(""),
      (c) => c.setStatus("", "sent"),
      (c) => c.setStatus("x", "gone" as never),
      (c) => c.delete(5 as never),
      (c) => c.listDue(-5),
      (c) => c.listDue("now" as never),
      (c) => c.listDue(5, { limit: 0 }),
      (c) => c.listBySession("", "s"),
      (c) => c.listBySession("a", "s", { max: 1 } as never),
    ];
    for (const call of calls) expect(await same(commitments, store, call)).not.toHaveProperty("ok");
    expect(await stored(backend, where)).toEqual(oracleRows(db));
  });

  it("gives CommitmentStore's answers to any sequence of calls (property)", async () => {
    const { commitments, store, clock } = await setup();
    let run = 0;
    const id = fc.constantFrom("a", "b", "c");
    const status = fc.constantFrom(...COMMITMENT_STATUSES);
    const command = fc.oneof(
      fc.record({
        op: fc.constant("upsert"),
        id,
        status,
        due: fc.integer({ min: 990, max: 1_020 }),
        span: fc.integer({ min: -2, max: 10 }),
        session: fc.constantFrom("s1", "s2"),
      }),
      fc.record({ op: fc.constant("setStatus"), id, status }),
      fc.record({ op: fc.constant("delete"), id }),
      fc.record({ op: fc.constant("due"), at: fc.integer({ min: 990, max: 1_030 }) }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 5 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        const agent = `agent${++run}`;
        const key = (k: string) => `${agent}-${k}`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "upsert") {
            const row = {
              ...base(key(c.id), c.due),
              agentId: agent,
              sessionKey: c.session,
              status: c.status,
              dueLatestAt: c.due + c.span,
            };
            await same(commitments, store, (s) => s.upsert(row));
          } else if (c.op === "setStatus")
            await same(commitments, store, (s) => s.setStatus(key(c.id), c.status));
          else if (c.op === "delete") await same(commitments, store, (s) => s.delete(key(c.id)));
          else {
            const due = (await same(commitments, store, (s) => s.listDue(c.at))) as {
              ok: { agentId: string }[];
            };
            expect(due).toHaveProperty("ok");
          }
        }
        await same(commitments, store, (s) => s.listBySession(agent, "s1"));
        await same(commitments, store, (s) => s.listBySession(agent, "s2", { limit: 2 }));
      }),
      { numRuns: 50 },
    );
  });

  it("keeps one whole write per commitment when 4 control planes write them at once", async () => {
    const { cp, another, where } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const rounds = 20;
    const written = (h: number, i: number, id: string): NewCommitment => ({
      ...base(id, 100 * h + i),
      sessionKey: `s-${h}`,
      record: { host: h, round: i, fill: `${h}:${i}:`.repeat(300) },
    });
    await Promise.all(
      hosts.map(async (host, h) => {
        for (let i = 0; i < rounds; i++) {
          for (const id of ["k0", "k1"]) {
            await host.commitments.upsert(written(h, i, id));
            await host.commitments.setStatus(id, "snoozed");
          }
        }
      }),
    );
    const rows = await stored(backend, where);
    expect(rows.map((row) => row.id)).toEqual(["k0", "k1"]);
    for (const row of rows) {
      // Every column is one host's last write (the status set after it by any host).
      const record = JSON.parse(row.record_json as string);
      expect(record).toEqual(written(record.host, rounds - 1, "").record);
      expect(row).toMatchObject({
        session_key: `s-${record.host}`,
        due_earliest_at: 100 * record.host + rounds - 1,
        status: "snoozed",
      });
    }
  });
});
