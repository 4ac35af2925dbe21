import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { MediaStore } from "../stores/global/media-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneMedia } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same as sameOnBoth, storedRows } from "./test-support/parity.js";

// Media rows on every backend, as control-plane-plugin-state.test.ts does plugin state: each test
// runs on the embedded SQLite control plane and on a real PostgreSQL, with MediaStore on its own
// SQLite database as the oracle of parity, and rows (bytes included) read back through a separate
// connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Rows = ControlPlaneMedia | MediaStore;

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A stream is compared by what it yields (or the error it ends with). */
async function settled(value: unknown): Promise<unknown> {
  if (value && typeof value === "object" && "pipe" in value) {
    return { streamed: await readAll(value as NodeJS.ReadableStream) };
  }
  return value;
}

function same(media: ControlPlaneMedia, store: MediaStore, call: (m: Rows) => unknown) {
  return sameOnBoth(media, store, call, settled);
}

const ROWS = "SELECT * FROM media_blobs ORDER BY subdir, id";

/** Bytes as hex, so rows compare by content whatever class a driver returns (and diff quickly). */
const hexBlob = (row: Record<string, unknown>) => ({
  ...row,
  blob: Buffer.from(row.blob as Uint8Array).toString("hex"),
});

/** Every row as stored, read without the code under test; integers as numbers, bytes as hex. */
const stored = (backend: Backend, where: string) =>
  storedRows(backend, where, ROWS, {
    bigints: ["size_bytes", "created_at", "updated_at", "expires_at"],
    bytes: ["blob"],
  });

function oracleRows(db: Database) {
  return (db.prepare(ROWS).all() as Record<string, unknown>[]).map(hexBlob);
}

const bytes = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));

describe.each(BACKENDS)("control plane on %s: media", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    const store = new MediaStore(db, { clock: clock.now });
    return { ...opened, media: opened.cp.media, clock, store, db };
  };

  it("puts, gets, streams, describes, lists, expires and deletes exactly as MediaStore does", async () => {
    const { media, store, clock, db, where } = await setup();
    await same(media, store, (m) =>
      m.put("inbound", "photo.jpg", bytes, { contentType: "image/jpeg" }),
    );
    await same(media, store, (m) => m.put("inbound", "a.txt", Buffer.from("hi")));
    await same(media, store, (m) => m.put("inbound", "é", new Uint8Array([0, 255, 0])));
    await same(media, store, (m) => m.put("inbound", "empty", Buffer.alloc(0)));
    await same(media, store, (m) => m.put("inbound", "ttl", Buffer.from("x"), { ttlMs: 100 }));
    await same(media, store, (m) => m.put("outbound", "b.txt", Buffer.from("yo")));
    clock.advance(60);
    await same(media, store, (m) =>
      m.put("inbound", "a.txt", Buffer.from("again"), { contentType: "text/plain" }),
    );
    const reads: ((m: Rows) => unknown)[] = [
      (m) => m.get("inbound", "photo.jpg"),
      (m) => m.info("inbound", "a.txt"),
      (m) => m.get("inbound", "empty"),
      (m) => m.get("inbound", "ttl"),
      (m) => m.info("inbound", "missing"),
      (m) => m.stream("inbound", "photo.jpg"),
      (m) => m.stream("inbound", "missing"),
      (m) => m.list("inbound"),
      (m) => m.list("inbound", { after: "a.txt", limit: 2 }),
      (m) => m.list("nowhere"),
    ];
    for (const read of reads) await same(media, store, read);
    clock.advance(40);
    // The TTL row lapsed: gone from reads, still on disk until a sweep; a put revives it as new.
    for (const read of reads) await same(media, store, read);
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    await same(media, store, (m) => m.put("inbound", "ttl", Buffer.from("new")));
    for (const id of ["a.txt", "a.txt", "missing"])
      await same(media, store, (m) => m.delete("inbound", id));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    expect((await stored(backend, where)).length).toBe(5);
  });

  it("refuses the arguments MediaStore refuses, with the same code and message", async () => {
    const { media, store, db, where } = await setup();
    const calls: ((m: Rows) => unknown)[] = [
      (m) => m.put("inbound", "x", "text" as never),
      (m) => m.put("", "x", Buffer.from("x")),
      (m) => m.put("s".repeat(257), "x", Buffer.from("x")),
      (m) => m.put("inbound", "\ud800", Buffer.from("x")),
      (m) => m.put("inbound", "x", Buffer.from("x"), { contentType: "" }),
      (m) => m.put("inbound", "x", Buffer.from("x"), { contentType: "t".repeat(257) }),
      (m) => m.put("inbound", "x", Buffer.from("x"), { ttlMs: 0 }),
      (m) => m.put("inbound", "x", Buffer.from("x"), { type: "a" } as never),
      (m) => m.get("inbound", ""),
      (m) => m.info(5 as never, "x"),
      (m) => m.stream("inbound", ""),
      (m) => m.delete("inbound", 7 as never),
      (m) => m.list("inbound", { limit: 0 }),
      (m) => m.list("inbound", { after: 5 } as never),
      (m) => m.list("inbound", { prefix: "a" } as never),
    ];
    for (const call of calls) expect(await same(media, store, call)).not.toHaveProperty("ok");
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    expect(oracleRows(db)).toEqual([]);
  });

  it("gives MediaStore's answers to any sequence of calls (property)", async () => {
    const { media, store, clock } = await setup();
    let run = 0;
    const id = fc.constantFrom("a", "a.b", "b", "é");
    const data = fc.uint8Array({ maxLength: 64 });
    const command = fc.oneof(
      fc.record({
        op: fc.constant("put"),
        id,
        data,
        type: fc.option(fc.constantFrom("image/png", "text/plain"), { nil: undefined }),
        ttl: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
      }),
      fc.record({ op: fc.constant("delete"), id }),
      fc.record({ op: fc.constant("get"), id }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 6 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        const subdir = `s${++run}`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "put") {
            const options = {
              ...(c.type !== undefined && { contentType: c.type }),
              ...(c.ttl !== undefined && { ttlMs: c.ttl }),
            };
            await same(media, store, (m) => m.put(subdir, c.id, c.data, options));
          } else if (c.op === "delete") await same(media, store, (m) => m.delete(subdir, c.id));
          else await same(media, store, (m) => m.get(subdir, c.id));
        }
        await same(media, store, (m) => m.list(subdir));
        await same(media, store, (m) => m.list(subdir, { after: "a", limit: 2 }));
      }),
      { numRuns: 50 },
    );
  });

  it("keeps one whole row per id when 4 control planes put the same ids at once", async () => {
    const { cp, another, where } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const ids = ["m0", "m1", "m2"];
    const rounds = 15;
    // Bytes, size and content type all name the writer: a torn row would disagree with itself.
    const payload = (h: number, i: number) => Buffer.alloc(10_000 + h * 1000 + i, h * 16 + i);
    await Promise.all(
      hosts.flatMap((host, h) =>
        ids.map(async (id) => {
          for (let i = 0; i < rounds; i++) {
            await host.media.put("shared", id, payload(h, i), { contentType: `x/${h}-${i}` });
          }
        }),
      ),
    );
    const rows = await stored(backend, where);
    expect(rows.map((row) => row.id)).toEqual(ids);
    for (const row of rows) {
      const [h, i] = (row.content_type as string).slice(2).split("-").map(Number) as [
        number,
        number,
      ];
      expect(i).toBe(rounds - 1);
      expect(row.blob === payload(h, i).toString("hex")).toBe(true);
      expect(row.size_bytes).toBe(payload(h, i).byteLength);
      for (const host of hosts) {
        const got = await host.media.get("shared", row.id as string);
        expect(got?.data.equals(payload(h, i))).toBe(true);
      }
    }
  });
});
