import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import type { SubagentRunRecord } from "../stores/global/subagent-run-rows.js";
import { SubagentRunStore } from "../stores/global/subagent-run-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneSubagents } from "./control-plane.js";
import {
  BACKENDS,
  type Backend,
  rejects,
  useControlPlanes,
  withClient,
} from "./test-support/control-planes.js";
import { same } from "./test-support/parity.js";

// Subagent runs on every backend, as control-plane-tasks.test.ts does tasks: each test runs on the
// embedded SQLite control plane and on a real PostgreSQL, with SubagentRunStore on its own SQLite
// database as the oracle of parity, and rows read back through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Runs = ControlPlaneSubagents | SubagentRunStore;

const ROWS = "SELECT * FROM subagent_runs ORDER BY run_id";

/** Every row as stored, read without the code under test; integers as numbers on both. */
async function storedRows(backend: Backend, where: string): Promise<Record<string, unknown>[]> {
  if (backend === "sqlite") {
    const raw = openRawSqlite(join(where, "state", "state.sqlite"), { readonly: true });
    try {
      return raw.prepare(ROWS).all() as Record<string, unknown>[];
    } finally {
      raw.close();
    }
  }
  const { rows } = await withClient(where, (client) => client.query(ROWS));
  return rows.map((row: Record<string, unknown>) => ({
    ...row,
    created_at: Number(row.created_at),
    ended_at: row.ended_at === null ? null : Number(row.ended_at),
  }));
}

function oracleRows(db: Database) {
  return db.prepare(ROWS).all();
}

/** A run record in the registry's shape. */
function record(runId: string, extra: Partial<SubagentRunRecord> = {}): SubagentRunRecord {
  return {
    runId,
    childSessionKey: `agent:main:subagent:${runId}`,
    controllerSessionKey: "agent:main:main",
    requesterSessionKey: "agent:main:main",
    requesterOrigin: { channel: "discord", to: "channel:1", ünï: "😀" },
    task: "Research the topic and report back",
    createdAt: 1_770_000_000_000,
    frozenResultText: null,
    nested: { list: [1, 2.5, null, 'a"b\\c'] },
    ...extra,
  };
}

describe.each(BACKENDS)("control plane on %s: subagent runs", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const store = new SubagentRunStore(db, { clock: clock.now });
    return { ...opened, subagents: opened.cp.subagents, clock, store, db };
  };

  it("upserts, gets, updates, ends, lists and deletes exactly as SubagentRunStore does", async () => {
    const { subagents, store, clock, db, where } = await setup();
    const records = [
      record("r2"),
      record("r1", { requesterSessionKey: "agent:main:other" }),
      record("r0", { createdAt: undefined, childSessionKey: undefined }),
      record("r3", { endedAt: 1_770_000_009_000, outcome: { status: "ok" } }),
      record("r4", { endedAt: 1_770_000_009_000, cleanupHandled: true }),
      record("r5", { endedAt: 1_770_000_008_000 }),
    ];
    for (const r of records) await same(subagents, store, (s) => s.upsert(r));
    clock.advance(1_000);
    await same(subagents, store, (s) => s.upsert(record("r2", { label: "replaced" })));
    const patches: [string, Parameters<Runs["update"]>[1]][] = [
      ["r1", { label: "deep dive" }],
      ["r1", (current) => ({ ...current, announceRetryCount: 2 })],
      ["r1", { runId: "other" }],
      ["r1", { createdAt: -1 }],
      ["r1", { controllerSessionKey: 5 as never }],
      ["r1", () => ({ runId: "r1" })],
      ["r1", () => null as never],
      ["r1", { big: "x".repeat(1024 * 1024) }],
      ["missing", {}],
      ["", {}],
    ];
    for (const [id, patch] of patches) {
      clock.advance(3);
      await same(subagents, store, (s) => s.update(id, patch));
    }
    await same(subagents, store, (s) => s.end("r2", { outcome: { status: "timeout" } }));
    await same(subagents, store, (s) => s.end("r0"));
    await same(subagents, store, (s) => s.end("r1", { endedAt: 1_770_000_001_000 }));
    await same(subagents, store, (s) => s.end("missing"));
    await same(subagents, store, (s) => s.end("r5", { endedAt: "soon" as never }));
    await same(subagents, store, (s) => s.markCleanupHandled("r3"));
    await same(subagents, store, (s) => s.markCleanupHandled("missing"));
    for (const id of ["r1", "r4", "nope", ""]) await same(subagents, store, (s) => s.get(id));
    await rejects(subagents.update("missing", {}), "E_NOT_FOUND", /no subagent run missing/);
    await rejects(subagents.update("r1", { runId: "x" }), "E_INVALID_ARGUMENT", /cannot change/);
    // Rows behind both, byte for byte (the record text included).
    expect(await storedRows(backend, where)).toEqual(oracleRows(db));
    for (const id of ["r4", "gone", "r4", 7 as never]) {
      await same(subagents, store, (s) => s.delete(id));
    }
    expect(await storedRows(backend, where)).toEqual(oracleRows(db));
    expect((await storedRows(backend, where)).length).toBe(5);
  });

  it("refuses the arguments SubagentRunStore refuses, with the same code and message", async () => {
    const { subagents, store, db, where } = await setup();
    const refused: unknown[] = [
      "x",
      [],
      null,
      { task: "no id" },
      { runId: "" },
      { runId: "x".repeat(257) },
      { runId: 5 },
      { runId: "a", childSessionKey: 5 },
      { runId: "a", requesterSessionKey: "" },
      { runId: "a", createdAt: -1 },
      { runId: "a", createdAt: 1.5 },
      { runId: "a", endedAt: "soon" },
      { runId: "a", task: "x".repeat(1024 * 1024) },
    ];
    for (const r of refused) {
      const got = await same(subagents, store, (s) => s.upsert(r as SubagentRunRecord));
      expect(got).not.toHaveProperty("ok");
    }
    // What JSON.stringify makes of a Date, a nested function or a lone surrogate (an escape) is
    // stored, the same on both.
    await same(subagents, store, (s) => s.upsert({ runId: "a", bad: "\ud800" }));
    await same(subagents, store, (s) => s.upsert({ runId: "a", when: new Date(0) } as never));
    await same(subagents, store, (s) => s.upsert({ runId: "a", nested: { fn: () => 1 } }));
    await same(subagents, store, (s) => s.upsert(record("a")));
    const lists: ((s: Runs) => unknown)[] = [
      (s) => s.listBySession("toString" as never, "x"),
      (s) => s.listBySession("child", ""),
      (s) => s.listBySession("child", "x", { limit: 0 }),
      (s) => s.listBySession("child", "x", { max: 1 } as never),
      (s) => s.listBySession("controller", "agent:main:main", { limit: 1 }),
      (s) => s.listUnfinished({ limit: 0 }),
      (s) => s.listUnfinished({ max: 1 } as never),
      (s) => s.listPendingCleanup({ limit: 1.5 }),
      (s) => s.listPendingCleanup({ until: 1 } as never),
      (s) => s.get(5 as never),
      (s) => s.delete(""),
    ];
    for (const list of lists) await same(subagents, store, list);
    expect(await storedRows(backend, where)).toEqual(oracleRows(db));
    expect((await storedRows(backend, where)).map((r) => r.run_id)).toEqual(["a"]);
  });

  it("gives SubagentRunStore's answers to any sequence of calls, list by list (property)", async () => {
    const { subagents, store, clock } = await setup();
    let run = 0;
    const id = fc.constantFrom("a", "b", "c", "d");
    const key = fc.constantFrom("x", "y", "ü z");
    const time = fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined });
    const fields = fc.dictionary(fc.constantFrom("k", "l", "m"), fc.oneof(fc.integer(), key));
    const command = fc.oneof(
      fc.record({
        op: fc.constant("upsert"),
        id,
        child: fc.option(key, { nil: undefined }),
        requester: fc.option(key, { nil: undefined }),
        controller: fc.option(key, { nil: undefined }),
        createdAt: time,
        endedAt: time,
        cleanupHandled: fc.boolean(),
        fields,
      }),
      fc.record({ op: fc.constant("update"), id, fields }),
      fc.record({ op: fc.constant("end"), id, endedAt: time, fields }),
      fc.record({ op: fc.constant("cleanup"), id }),
      fc.record({ op: fc.constant("delete"), id }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        // Each run has its own ids and session keys; the worklists span every run.
        const p = `r${++run}-`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "upsert") {
            const r: SubagentRunRecord = {
              runId: p + c.id,
              ...c.fields,
              ...(c.child && { childSessionKey: p + c.child }),
              ...(c.requester && { requesterSessionKey: p + c.requester }),
              ...(c.controller && { controllerSessionKey: p + c.controller }),
              ...(c.createdAt !== undefined && { createdAt: c.createdAt }),
              ...(c.endedAt !== undefined && { endedAt: c.endedAt }),
              cleanupHandled: c.cleanupHandled,
            };
            await same(subagents, store, (s) => s.upsert(r));
          } else if (c.op === "update") {
            await same(subagents, store, (s) => s.update(p + c.id, c.fields));
          } else if (c.op === "end") {
            const f = { ...c.fields, ...(c.endedAt !== undefined && { endedAt: c.endedAt }) };
            await same(subagents, store, (s) => s.end(p + c.id, f));
          } else if (c.op === "cleanup") {
            await same(subagents, store, (s) => s.markCleanupHandled(p + c.id));
          } else await same(subagents, store, (s) => s.delete(p + c.id));
        }
        for (const k of ["x", "y", "ü z"]) {
          for (const role of ["child", "requester", "controller"] as const) {
            await same(subagents, store, (s) => s.listBySession(role, p + k, { limit: 3 }));
          }
        }
        await same(subagents, store, (s) => s.listUnfinished({ limit: 1000 }));
        await same(subagents, store, (s) => s.listPendingCleanup({ limit: 1000 }));
      }),
      { numRuns: 60 },
    );
  });

  it("loses no field update when 4 control planes patch the same runs at once", async () => {
    const { cp, another, where } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const ids = ["s0", "s1", "s2"];
    for (const id of ids) await cp.subagents.upsert(record(id, { total: 0 }));
    const rounds = 25;
    const bump = (h: number) => (current: SubagentRunRecord) => ({
      ...current,
      total: (current.total as number) + 1,
      [`host${h}`]: ((current[`host${h}`] as number | undefined) ?? 0) + 1,
    });
    await Promise.all(
      hosts.flatMap((host, h) =>
        ids.map(async (id) => {
          for (let i = 0; i < rounds; i++) await host.subagents.update(id, bump(h));
        }),
      ),
    );
    await Promise.all(hosts.map((host, h) => host.subagents.end("s0", { [`by${h}`]: true })));
    const rows = await storedRows(backend, where);
    for (const row of rows) {
      const stored = JSON.parse(row.payload_json as string);
      expect(stored).toMatchObject({ total: 4 * rounds, host0: rounds, host3: rounds });
      expect([stored.host1, stored.host2]).toEqual([rounds, rounds]);
    }
    expect(JSON.parse(rows[0]?.payload_json as string)).toMatchObject({
      by0: true,
      by1: true,
      by2: true,
      by3: true,
    });
  });
});
