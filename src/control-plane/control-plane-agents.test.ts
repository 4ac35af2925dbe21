import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { AgentRegistryStore } from "../stores/global/agent-registry-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneAgents } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same, storedRows } from "./test-support/parity.js";

// The agent registry on every backend, as control-plane-backup-runs.test.ts does backup runs:
// each test runs on the embedded SQLite control plane and on a real PostgreSQL, with
// AgentRegistryStore on its own SQLite database (the home's statements) as the oracle of parity,
// and rows read back through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Agents = ControlPlaneAgents | AgentRegistryStore;

const AGENTS = "SELECT * FROM agents ORDER BY agent_id";
const DATABASES = "SELECT * FROM agent_databases ORDER BY agent_id";
const AGENT_BIGINTS = ["created_at", "updated_at"];
const DATABASE_BIGINTS = ["schema_version", "last_seen_at", "size_bytes", "quick_checked_at"];

async function stored(backend: Backend, where: string) {
  return [
    await storedRows(backend, where, AGENTS, { bigints: AGENT_BIGINTS }),
    await storedRows(backend, where, DATABASES, { bigints: DATABASE_BIGINTS }),
  ];
}

const oracleRows = (db: Database) => [db.prepare(AGENTS).all(), db.prepare(DATABASES).all()];

const at = (id: string, size = 4096, schemaVersion = 3) => ({
  path: `agents/${id}/agent/agent.sqlite`,
  schemaVersion,
  sizeBytes: size,
});

describe.each(BACKENDS)("control plane on %s: agents", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const store = new AgentRegistryStore(db, { clock: clock.now });
    return { ...opened, agents: opened.cp.agents, store, db, clock };
  };

  it("registers, gets, lists, refreshes and removes agents exactly as the home's store does", async () => {
    const { agents, store, db, where, clock } = await setup();
    for (const id of ["main", "B", "a.b", "_x", "-y", "Zé"]) {
      await same(agents, store, (s) => s.register(id, at(id)));
      clock.advance(7);
    }
    const created = await same(agents, store, (s) => s.get("main"));
    clock.advance(1_000);
    await same(agents, store, (s) => s.register("main", at("main", 8192, 4)));
    const again = (await same(agents, store, (s) => s.get("main"))) as {
      ok: { createdAt: number };
    };
    expect(again.ok.createdAt).toBe((created as typeof again).ok.createdAt);
    await same(agents, store, (s) => s.list());
    for (const limit of [1, 2, 5, 10_000]) await same(agents, store, (s) => s.list({ limit }));
    for (const after of ["", "B", "_x", "main", "zzz"]) {
      await same(agents, store, (s) => s.list({ after, limit: 2 }));
    }
    clock.advance(500);
    await same(agents, store, (s) => s.refresh("B", { sizeBytes: 123 }));
    const check = { result: "row 3 missing from index", checkedAt: 42 };
    await same(agents, store, (s) => s.refresh("a.b", { sizeBytes: 0, quickCheck: check }));
    await same(agents, store, (s) => s.refresh("a.b", { sizeBytes: 9 }));
    await same(agents, store, (s) => s.refresh("nobody", { sizeBytes: 9 }));
    await same(agents, store, (s) => s.remove("-y"));
    await same(agents, store, (s) => s.remove("-y"));
    for (const id of ["main", "B", "a.b", "-y", "nobody"])
      await same(agents, store, (s) => s.get(id));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
  });

  it("refuses the arguments the home's store refuses, with the same code and message", async () => {
    const { agents, store, db, where } = await setup();
    await same(agents, store, (s) => s.register("a", at("a")));
    const refused: ((s: Agents) => unknown)[] = [
      (s) => s.register("", at("x")),
      (s) => s.register("../x", at("x")),
      (s) => s.register("a/b", at("x")),
      (s) => s.register(5 as never, at("x")),
      (s) => s.register("x".repeat(65), at("x")),
      (s) => s.register("x", undefined as never),
      (s) => s.register("x", { ...at("x"), path: "" }),
      (s) => s.register("x", { ...at("x"), schemaVersion: -1 }),
      (s) => s.register("x", { ...at("x"), sizeBytes: 1.5 }),
      (s) => s.register("x", { ...at("x"), sizeBytes: "1" as never }),
      (s) => s.register("x", { ...at("x"), extra: 1 } as never),
      (s) => s.refresh("a", { sizeBytes: -1 }),
      (s) => s.refresh("a", {} as never),
      (s) => s.refresh("a", { sizeBytes: 1, quickCheck: { result: "", checkedAt: 1 } }),
      (s) => s.refresh("a", { sizeBytes: 1, quickCheck: { result: "ok" } as never }),
      (s) => s.refresh("a", { sizeBytes: 1, quickCheck: { result: "ok", checkedAt: -5 } }),
      (s) => s.refresh("a", { sizeBytes: 1, size: 2 } as never),
      (s) => s.refresh("no body", { sizeBytes: 1 }),
      (s) => s.refresh("ghost", { sizeBytes: 1 }),
      (s) => s.get("a/b"),
      (s) => s.remove(""),
      (s) => s.list({ limit: 0 }),
      (s) => s.list({ limit: 10_001 }),
      (s) => s.list({ after: "../" }),
      (s) => s.list({ first: 1 } as never),
    ];
    for (const call of refused) {
      const got = await same(agents, store, call);
      expect(got, String(call)).not.toHaveProperty("ok");
    }
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    expect((await stored(backend, where))[0]?.map((r) => r.agent_id)).toEqual(["a"]);
  });

  it("gives the home's store's answers to any sequence of calls (property)", async () => {
    const { agents, store, clock, where, db } = await setup();
    let round = 0;
    const id = fc.constantFrom("a", "b", "B", "c_1", "Z");
    const size = fc.integer({ min: 0, max: 1 << 20 });
    const command = fc.oneof(
      fc.record({ op: fc.constant("register"), id, size, version: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ op: fc.constant("refresh"), id, size, check: fc.option(fc.string()) }),
      fc.record({ op: fc.constant("get"), id }),
      fc.record({ op: fc.constant("remove"), id }),
      fc.record({ op: fc.constant("list"), after: fc.option(id), limit: fc.integer({ max: 4 }) }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 1, max: 1_000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        const p = `r${++round}-`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "register") {
            await same(agents, store, (s) => s.register(p + c.id, at(p + c.id, c.size, c.version)));
          } else if (c.op === "refresh") {
            const quickCheck = c.check === null ? undefined : { result: c.check, checkedAt: 7 };
            const refresh = { sizeBytes: c.size, ...(quickCheck ? { quickCheck } : {}) };
            await same(agents, store, (s) => s.refresh(p + c.id, refresh));
          } else if (c.op === "get") await same(agents, store, (s) => s.get(p + c.id));
          else if (c.op === "remove") await same(agents, store, (s) => s.remove(p + c.id));
          else {
            const after = c.after === null ? p : p + c.after;
            await same(agents, store, (s) => s.list({ after, limit: c.limit }));
          }
        }
        await same(agents, store, (s) => s.list({ limit: 10_000 }));
      }),
      { numRuns: 40 },
    );
    expect(await stored(backend, where)).toEqual(oracleRows(db));
  });

  it("keeps one entry, with the first createdAt, when 4 control planes register one agent at once", async () => {
    const { cp, another, count } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const first = await cp.agents.register("shared", at("shared", 1));
    await Promise.all(
      hosts.flatMap((host, h) => [
        host.agents.register("shared", at("shared", 100 + h)),
        ...[0, 1, 2].map((i) => host.agents.register(`h${h}-${i}`, at(`h${h}-${i}`))),
      ]),
    );
    expect(await count("agents")).toBe(13);
    expect(await count("agent_databases")).toBe(13);
    for (const host of hosts) {
      const shared = await host.agents.get("shared");
      expect(shared?.createdAt).toBe(first.createdAt);
      expect([100, 101, 102, 103]).toContain(shared?.sizeBytes);
      expect((await host.agents.list()).map((a) => a.agentId)).toHaveLength(13);
    }
  });
});
