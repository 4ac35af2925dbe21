import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { PluginBlobStore } from "../stores/global/plugin-blob-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlanePluginBlobs } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same, storedRows } from "./test-support/parity.js";

// Plugin blobs on every backend, as control-plane-media.test.ts does media: PluginBlobStore on its
// own SQLite database is the oracle of parity; rows (bytes as hex) are read back through a
// separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Blobs = ControlPlanePluginBlobs | PluginBlobStore;

const ROWS = "SELECT * FROM plugin_blob_entries ORDER BY plugin_id, namespace, entry_key";
const hexBlob = (row: Record<string, unknown>) => ({
  ...row,
  blob: Buffer.from(row.blob as Uint8Array).toString("hex"),
});

/** Every row as stored, read without the code under test; integers as numbers, bytes as hex. */
const stored = (backend: Backend, where: string) =>
  storedRows(backend, where, ROWS, {
    bigints: ["created_at", "updated_at", "expires_at"],
    bytes: ["blob"],
  });

function oracleRows(db: Database) {
  return (db.prepare(ROWS).all() as Record<string, unknown>[]).map(hexBlob);
}

describe.each(BACKENDS)("control plane on %s: plugin blobs", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const store = new PluginBlobStore(db, { clock: clock.now });
    return { ...opened, blobs: opened.cp.pluginBlobs, clock, store, db };
  };

  it("sets, gets, lists, expires and deletes exactly as PluginBlobStore does", async () => {
    const { blobs, store, clock, db, where } = await setup();
    const big = Buffer.from(Array.from({ length: 100_000 }, (_, i) => i % 253));
    const meta = { type: "image/png", ünï: "😀", n: [1, 2.5, null] };
    await same(blobs, store, (b) => b.set("p", "ns", "big", big, { metadata: meta }));
    await same(blobs, store, (b) => b.set("p", "ns", "a", new Uint8Array([0, 255])));
    await same(blobs, store, (b) => b.set("p", "ns", "empty", Buffer.alloc(0)));
    await same(blobs, store, (b) => b.set("p", "ns", "ttl", Buffer.from("x"), { ttlMs: 100 }));
    clock.advance(60);
    await same(blobs, store, (b) =>
      b.set("p", "ns", "a", Buffer.from("again"), { metadata: { v: 2 } }),
    );
    const reads: ((b: Blobs) => unknown)[] = [
      (b) => b.get("p", "ns", "big"),
      (b) => b.get("p", "ns", "a"),
      (b) => b.get("p", "ns", "ttl"),
      (b) => b.get("p", "ns", "missing"),
      (b) => b.list("p", "ns"),
      (b) => b.list("p", "ns", { after: "a", limit: 2 }),
    ];
    for (const read of reads) await same(blobs, store, read);
    clock.advance(40);
    for (const read of reads) await same(blobs, store, read);
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    await same(blobs, store, (b) => b.set("p", "ns", "ttl", Buffer.from("new")));
    for (const key of ["a", "a", "missing"])
      await same(blobs, store, (b) => b.delete("p", "ns", key));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    expect((await stored(backend, where)).length).toBe(3);
  });

  it("refuses the arguments PluginBlobStore refuses, with the same code and message", async () => {
    const { blobs, store, db, where } = await setup();
    const x = Buffer.from("x");
    const calls: ((b: Blobs) => unknown)[] = [
      (b) => b.set("p", "ns", "k", "text" as never),
      (b) => b.set("", "ns", "k", x),
      (b) => b.set("p", "ns", "\ud800", x),
      (b) => b.set("p", "ns", "k", x, { metadata: [] as never }),
      (b) => b.set("p", "ns", "k", x, { metadata: { big: "m".repeat(64 * 1024) } }),
      (b) => b.set("p", "ns", "k", x, { ttlMs: 0 }),
      (b) => b.set("p", "ns", "k", x, { type: "a" } as never),
      (b) => b.get("p", "", "k"),
      (b) => b.delete(7 as never, "ns", "k"),
      (b) => b.list("p", "ns", { limit: 0 }),
      (b) => b.list("p", "ns", { prefix: "a" } as never),
    ];
    for (const call of calls) expect(await same(blobs, store, call)).not.toHaveProperty("ok");
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    expect(oracleRows(db)).toEqual([]);
  });

  it("gives PluginBlobStore's answers to any sequence of calls (property)", async () => {
    const { blobs, store, clock } = await setup();
    let run = 0;
    const key = fc.constantFrom("a", "a.b", "b", "é");
    const command = fc.oneof(
      fc.record({
        op: fc.constant("set"),
        key,
        data: fc.uint8Array({ maxLength: 64 }),
        meta: fc.dictionary(fc.constantFrom("t", "u"), fc.oneof(fc.integer(), fc.string())),
        ttl: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
      }),
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
            const options = { metadata: c.meta, ...(c.ttl !== undefined && { ttlMs: c.ttl }) };
            await same(blobs, store, (b) => b.set("p", ns, c.key, c.data, options));
          } else if (c.op === "delete") await same(blobs, store, (b) => b.delete("p", ns, c.key));
          else await same(blobs, store, (b) => b.get("p", ns, c.key));
        }
        await same(blobs, store, (b) => b.list("p", ns));
        await same(blobs, store, (b) => b.list("p", ns, { after: "a", limit: 2 }));
      }),
      { numRuns: 50 },
    );
  });

  it("keeps one whole blob per key when 4 control planes set the same keys at once", async () => {
    const { cp, another, where } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const keys = ["b0", "b1", "b2"];
    const rounds = 15;
    const payload = (h: number, i: number) => Buffer.alloc(10_000 + h * 1000 + i, h * 16 + i);
    await Promise.all(
      hosts.flatMap((host, h) =>
        keys.map(async (key) => {
          for (let i = 0; i < rounds; i++) {
            await host.pluginBlobs.set("p", "ns", key, payload(h, i), { metadata: { h, i } });
          }
        }),
      ),
    );
    const rows = await stored(backend, where);
    expect(rows.map((row) => row.entry_key)).toEqual(keys);
    for (const row of rows) {
      const { h, i } = JSON.parse(row.metadata_json as string) as { h: number; i: number };
      expect(i).toBe(rounds - 1);
      expect(row.blob === payload(h, i).toString("hex")).toBe(true);
      for (const host of hosts) {
        const got = await host.pluginBlobs.get("p", "ns", row.entry_key as string);
        expect(got?.data.equals(payload(h, i))).toBe(true);
        expect(got?.sizeBytes).toBe(payload(h, i).byteLength);
      }
    }
  });
});
