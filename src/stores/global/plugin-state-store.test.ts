import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PluginBlobStore } from "./plugin-blob-store.js";
import { MAX_PLUGIN_VALUE_BYTES, PluginStateStore } from "./plugin-state-store.js";
import { expectStateError, simulatedClock, useGlobalDb } from "./test-support/global-db.js";

const openDb = useGlobalDb();

function stores() {
  const clock = simulatedClock();
  const db = openDb();
  return {
    db,
    clock,
    state: new PluginStateStore(db, { clock: clock.now }),
    blobs: new PluginBlobStore(db, { clock: clock.now }),
  };
}

describe("PluginStateStore", () => {
  it("gets, sets, lists and deletes JSON values by plugin, namespace and key", () => {
    const { state, clock } = stores();
    const created = state.set("telegram", "update-offsets", "bot-1", { offset: 42 });
    expect(created).toEqual({
      pluginId: "telegram",
      namespace: "update-offsets",
      key: "bot-1",
      value: { offset: 42 },
      createdAt: clock.now(),
      updatedAt: clock.now(),
      expiresAt: null,
    });
    clock.advance(10);
    const updated = state.set("telegram", "update-offsets", "bot-1", { offset: 43 });
    expect(updated.createdAt).toBe(created.createdAt);
    expect(updated.updatedAt).toBe(clock.now());
    expect(state.get("telegram", "update-offsets", "bot-1")).toEqual({ offset: 43 });
    expect(state.get("telegram", "other-namespace", "bot-1")).toBeUndefined();
    for (const key of ["b", "a", "ab", "c"]) state.set("telegram", "topics", key, key);
    state.set("discord", "topics", "a", "not telegram's");
    expect(state.list("telegram", "topics").map((e) => e.key)).toEqual(["a", "ab", "b", "c"]);
    expect(state.list("telegram", "topics", { prefix: "a" }).map((e) => e.key)).toEqual([
      "a",
      "ab",
    ]);
    expect(state.list("telegram", "topics", { after: "ab", limit: 1 }).map((e) => e.key)).toEqual([
      "b",
    ]);
    expect(state.delete("telegram", "topics", "a")).toBe(true);
    expect(state.delete("telegram", "topics", "a")).toBe(false);
  });

  it("hides an expired entry at once and treats a rewrite of it as new", () => {
    const { state, clock } = stores();
    const start = clock.now();
    state.set("matrix", "cooldown", "k", 1, { ttlMs: 1000 });
    clock.advance(999);
    expect(state.get("matrix", "cooldown", "k")).toBe(1);
    clock.advance(1);
    expect(state.get("matrix", "cooldown", "k")).toBeUndefined();
    expect(state.list("matrix", "cooldown")).toEqual([]);
    const revived = state.set("matrix", "cooldown", "k", 2);
    expect(revived.createdAt).toBe(start + 1000);
    expect(revived.expiresAt).toBeNull();
  });

  it("refuses what it cannot store faithfully", () => {
    const { state } = stores();
    expectStateError(() => state.set("", "ns", "k", 1), "E_INVALID_ARGUMENT", /plugin id/);
    expectStateError(() => state.set("p", "ns", "\uD800", 1), "E_INVALID_ARGUMENT", /entry key/);
    expectStateError(
      () => state.set("p", "ns", "k", "x".repeat(MAX_PLUGIN_VALUE_BYTES)),
      "E_TOO_LARGE",
    );
    expectStateError(
      () => state.set("p", "ns", "k", 1, { ttlMs: 0 }),
      "E_INVALID_ARGUMENT",
      /ttlMs/,
    );
    expect(() => state.set("p", "ns", "k", 1, { ttl: 5 } as never)).toThrow(/Unknown option.*ttl/);
    expect(() => new PluginStateStore(openDb(), { clok: Date.now } as never)).toThrow(/clok/);
  });
});

describe("PluginStateStore.seen (persistent dedupe)", () => {
  it("is true once per live key, and again after the key expires", () => {
    const { state, clock } = stores();
    expect(state.seen("imessage", "sent-echoes", "m1", 5000)).toBe(true);
    expect(state.seen("imessage", "sent-echoes", "m1", 5000)).toBe(false);
    expect(state.seen("imessage", "other", "m1", 5000)).toBe(true);
    clock.advance(4999);
    expect(state.seen("imessage", "sent-echoes", "m1", 5000)).toBe(false);
    clock.advance(1);
    expect(state.seen("imessage", "sent-echoes", "m1", 5000)).toBe(true);
    expect(state.getEntry("imessage", "sent-echoes", "m1")?.expiresAt).toBe(clock.now() + 5000);
  });

  it("matches a model of marks and expiry over random call sequences (property)", () => {
    const call = fc.record({
      key: fc.constantFrom("a", "b", "c"),
      ttl: fc.integer({ min: 1, max: 50 }),
      wait: fc.integer({ min: 0, max: 40 }),
    });
    const { state, clock } = stores();
    let run = 0;
    fc.assert(
      fc.property(fc.array(call, { maxLength: 40 }), (calls) => {
        const namespace = `dedupe-${run++}`;
        const expiry = new Map<string, number>();
        for (const { key, ttl, wait } of calls) {
          const now = clock.advance(wait);
          const isNew = (expiry.get(key) ?? Number.NEGATIVE_INFINITY) <= now;
          if (isNew) expiry.set(key, now + ttl);
          expect(state.seen("p", namespace, key, ttl)).toBe(isNew);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe("PluginBlobStore", () => {
  it("stores bytes with metadata and lists them without reading the bytes", () => {
    const { blobs, clock } = stores();
    const data = Buffer.from([0, 1, 2, 255]);
    const info = blobs.set("matrix", "idb-snapshots", "crypto", data, {
      metadata: { v: 2 },
      ttlMs: 100,
    });
    expect(info).toMatchObject({
      key: "crypto",
      metadata: { v: 2 },
      sizeBytes: 4,
      expiresAt: clock.now() + 100,
    });
    expect(blobs.get("matrix", "idb-snapshots", "crypto")?.data.equals(data)).toBe(true);
    blobs.set("matrix", "idb-snapshots", "other", new Uint8Array(3));
    expect(blobs.list("matrix", "idb-snapshots").map((b) => [b.key, b.sizeBytes])).toEqual([
      ["crypto", 4],
      ["other", 3],
    ]);
    clock.advance(100);
    expect(blobs.get("matrix", "idb-snapshots", "crypto")).toBeUndefined();
    expect(blobs.list("matrix", "idb-snapshots").map((b) => b.key)).toEqual(["other"]);
    expect(blobs.delete("matrix", "idb-snapshots", "other")).toBe(true);
    expectStateError(
      () => blobs.set("m", "n", "k", "text" as never),
      "E_INVALID_ARGUMENT",
      /Buffer/,
    );
    expectStateError(
      () => blobs.set("m", "n", "k", data, { metadata: [] as never }),
      "E_INVALID_ARGUMENT",
    );
  });
});
