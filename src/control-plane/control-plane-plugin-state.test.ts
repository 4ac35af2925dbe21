import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { PluginStateStore } from "../stores/global/plugin-state-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { JsonValue } from "../stores/json.js";
import type { ControlPlanePluginState } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same, storedRows } from "./test-support/parity.js";

// Plugin state on every backend, as control-plane-subagents.test.ts does subagent runs: each test
// runs on the embedded SQLite control plane and on a real PostgreSQL, with PluginStateStore on its
// own SQLite database as the oracle of parity, and rows read back through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type State = ControlPlanePluginState | PluginStateStore;

const ROWS = "SELECT * FROM plugin_state_entries ORDER BY plugin_id, namespace, entry_key";

/** Every row as stored, read without the code under test; integers as numbers on both. */
const stored = (backend: Backend, where: string) =>
  storedRows(backend, where, ROWS, { bigints: ["created_at", "updated_at", "expires_at"] });

function oracleRows(db: Database) {
  return db.prepare(ROWS).all();
}

describe.each(BACKENDS)("control plane on %s: plugin state", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const store = new PluginStateStore(db, { clock: clock.now });
    return { ...opened, state: opened.cp.pluginState, clock, store, db };
  };

  it("sets, gets, lists, expires, marks seen and deletes exactly as PluginStateStore does", async () => {
    const { state, store, clock, db, where } = await setup();
    const values: [string, JsonValue][] = [
      ["b", { nested: [1, 2.5, null, 'a"b\\c'], ünï: "😀" }],
      ["a", "text"],
      ["a/1", 42],
      ["a/2", [true, false]],
      ["ab", null],
      ["z\u{10ffff}", { deep: { deeper: {} } }],
      ["é", 1e21],
    ];
    for (const [key, value] of values)
      await same(state, store, (s) => s.set("p", "ns", key, value));
    await same(state, store, (s) => s.set("p", "ns", "ttl", 1, { ttlMs: 100 }));
    await same(state, store, (s) => s.set("p", "other", "a", "elsewhere"));
    clock.advance(50);
    await same(state, store, (s) => s.set("p", "ns", "a", "replaced"));
    for (const key of ["a", "b", "ttl", "missing"]) {
      await same(state, store, (s) => s.get("p", "ns", key));
      await same(state, store, (s) => s.getEntry("p", "ns", key));
    }
    const lists: ((s: State) => unknown)[] = [
      (s) => s.list("p", "ns"),
      (s) => s.list("p", "ns", { prefix: "a" }),
      (s) => s.list("p", "ns", { prefix: "a/", after: "a/1" }),
      (s) => s.list("p", "ns", { prefix: "b", after: "a" }),
      (s) => s.list("p", "ns", { prefix: "z\u{10ffff}" }),
      (s) => s.list("p", "ns", { after: "a/2", limit: 2 }),
      (s) => s.list("p", "nope"),
    ];
    for (const list of lists) await same(state, store, list);
    // Seen: new, then not while live, then new again once it lapsed.
    await same(state, store, (s) => s.seen("p", "dedupe", "m1", 10));
    await same(state, store, (s) => s.seen("p", "dedupe", "m1", 10));
    clock.advance(60);
    await same(state, store, (s) => s.seen("p", "dedupe", "m1", 10));
    // The TTL entry lapsed: gone from reads, still on disk; a set revives it as new.
    for (const list of lists.slice(0, 2)) await same(state, store, list);
    await same(state, store, (s) => s.get("p", "ns", "ttl"));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    clock.advance(1);
    await same(state, store, (s) => s.set("p", "ns", "ttl", 2));
    await same(state, store, (s) => s.set("p", "ns", "a", "again", { ttlMs: 5 }));
    for (const key of ["a", "ab", "ab", "missing"]) {
      await same(state, store, (s) => s.delete("p", "ns", key));
    }
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    expect((await stored(backend, where)).length).toBe(8);
  });

  it("refuses the arguments PluginStateStore refuses, with the same code and message", async () => {
    const { state, store, db, where } = await setup();
    const calls: ((s: State) => unknown)[] = [
      (s) => s.set("", "ns", "k", 1),
      (s) => s.set("p".repeat(257), "ns", "k", 1),
      (s) => s.set("p", 5 as never, "k", 1),
      (s) => s.set("p", "ns", "\ud800", 1),
      (s) => s.set("p", "ns", "k", "x".repeat(256 * 1024)),
      (s) => s.set("p", "ns", "k", undefined as never),
      (s) => s.set("p", "ns", "k", 1, { ttlMs: 0 }),
      (s) => s.set("p", "ns", "k", 1, { ttlMs: 1.5 }),
      (s) => s.set("p", "ns", "k", 1, { ttl: 5 } as never),
      (s) => s.get("p", "ns", ""),
      (s) => s.getEntry("p", "", "k"),
      (s) => s.delete(7 as never, "ns", "k"),
      (s) => s.list("p", "ns", { limit: 0 }),
      (s) => s.list("p", "ns", { after: 5 } as never),
      (s) => s.list("p", "ns", { max: 1 } as never),
      (s) => s.seen("p", "ns", "k", 0),
      (s) => s.seen("p", "ns", "k", "soon" as never),
    ];
    for (const call of calls) expect(await same(state, store, call)).not.toHaveProperty("ok");
    // What JSON.stringify makes of a Date or a lone surrogate in a value (an escape) is stored,
    // the same on both.
    await same(state, store, (s) => s.set("p", "ns", "d", { when: new Date(0) } as never));
    await same(state, store, (s) => s.set("p", "ns", "s", "\ud800"));
    await same(state, store, (s) => s.list("p", "ns", { prefix: "" }));
    await same(state, store, (s) => s.set("p", "ns", "big", "x".repeat(256 * 1024 - 2)));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
  });

  it("gives PluginStateStore's answers to any sequence of calls (property)", async () => {
    const { state, store, clock } = await setup();
    let run = 0;
    const key = fc.constantFrom("a", "a/b", "ab", "b", "é", "a/é");
    const value = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>;
    const ttl = fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined });
    const command = fc.oneof(
      fc.record({ op: fc.constant("set"), key, value, ttl }),
      fc.record({ op: fc.constant("seen"), key, ttl: fc.integer({ min: 1, max: 10 }) }),
      fc.record({ op: fc.constant("delete"), key }),
      fc.record({ op: fc.constant("get"), key }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 6 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        const ns = `n${++run}`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "set") {
            const options = c.ttl === undefined ? {} : { ttlMs: c.ttl };
            await same(state, store, (s) => s.set("p", ns, c.key, c.value, options));
          } else if (c.op === "seen")
            await same(state, store, (s) => s.seen("p", ns, c.key, c.ttl));
          else if (c.op === "delete") await same(state, store, (s) => s.delete("p", ns, c.key));
          else await same(state, store, (s) => s.getEntry("p", ns, c.key));
        }
        await same(state, store, (s) => s.list("p", ns));
        await same(state, store, (s) => s.list("p", ns, { prefix: "a/" }));
        await same(state, store, (s) => s.list("p", ns, { after: "a", limit: 2 }));
      }),
      { numRuns: 60 },
    );
  });

  it("keeps one whole write per key when 4 control planes write the same keys at once", async () => {
    const { cp, another, where } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const keys = ["k0", "k1", "k2"];
    const rounds = 25;
    // Each value is large and self-describing: a torn write would not parse or not match itself.
    const written = (h: number, i: number) => ({
      host: h,
      round: i,
      fill: `${h}:${i}:`.repeat(500),
    });
    const seen = await Promise.all(
      hosts.flatMap((host, h) =>
        keys.map(async (key) => {
          let fresh = 0;
          for (let i = 0; i < rounds; i++) {
            await host.pluginState.set("p", "ns", key, written(h, i));
            if (await host.pluginState.seen("p", "marks", `${key}-${i}`, 60_000)) fresh++;
          }
          return fresh;
        }),
      ),
    );
    // Every marker was new for exactly one host.
    expect(seen.reduce((a, b) => a + b, 0)).toBe(keys.length * rounds);
    const rows = await stored(backend, where);
    const values = rows.filter((row) => row.namespace === "ns");
    expect(values.map((row) => row.entry_key)).toEqual(keys);
    for (const row of values) {
      const stored = JSON.parse(row.value_json as string);
      expect(stored).toEqual(written(stored.host, rounds - 1));
      // What is stored is what a read on any host returns.
      for (const host of hosts) {
        expect(await host.pluginState.get("p", "ns", row.entry_key as string)).toEqual(stored);
      }
    }
    expect(rows.filter((row) => row.namespace === "marks").length).toBe(keys.length * rounds);
  });
});
