import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../db/database.js";
import { isStateError } from "../db/errors.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { KvStore, MAX_KV_VALUE_BYTES, prefixUpperBound } from "./kv-store.js";

const tempDir = useTempDirs();

function openKv() {
  const db = openDatabase({ path: join(tempDir(), "kv.sqlite"), role: "agent" });
  return { db, kv: new KvStore(db) };
}

describe("KvStore", () => {
  it("round-trips JSON values and timestamps", () => {
    const { db, kv } = openKv();
    const value = { a: [1, "two", null, true], nested: { é: "ü 🌿" } };
    const before = Date.now();
    const entry = kv.set("scope", "key", value);
    expect(kv.get("scope", "key")).toEqual(value);
    expect(entry.updatedAt).toBeGreaterThanOrEqual(before);
    expect(kv.getEntry("scope", "key")).toEqual({
      scope: "scope",
      key: "key",
      value,
      updatedAt: entry.updatedAt,
    });
    expect(kv.get("scope", "missing")).toBeUndefined();
    expect(kv.get("other", "key")).toBeUndefined();
    kv.set("scope", "key", "replaced");
    expect(kv.get("scope", "key")).toBe("replaced");
    expect(db.prepare("SELECT value_json FROM kv").all()).toEqual([{ value_json: '"replaced"' }]);
    expect(kv.delete("scope", "key")).toBe(true);
    expect(kv.delete("scope", "key")).toBe(false);
    db.close();
  });

  it("lists a scope ordered by key, with prefix and keyset pagination", () => {
    const { db, kv } = openKv();
    for (const key of ["b", "a", "c%", "c_", "ca", "cb", "d"]) kv.set("s", key, key);
    kv.set("other", "a", 0);
    expect(kv.list("s").map((e) => e.key)).toEqual(["a", "b", "c%", "c_", "ca", "cb", "d"]);
    expect(kv.list("s", { prefix: "c" }).map((e) => e.key)).toEqual(["c%", "c_", "ca", "cb"]);
    expect(kv.list("s", { prefix: "c%" }).map((e) => e.key)).toEqual(["c%"]);
    const page1 = kv.list("s", { limit: 3 });
    const page2 = kv.list("s", { limit: 3, after: page1.at(-1)?.key });
    expect([...page1, ...page2].map((e) => e.key)).toEqual(["a", "b", "c%", "c_", "ca", "cb"]);
    expect(kv.list("s", { prefix: "c", after: "c_" }).map((e) => e.key)).toEqual(["ca", "cb"]);
    expect(() => kv.list("s", { limit: 0 })).toThrow(/limit/);
    db.close();
  });

  it("guards value size and points large values to blob storage", () => {
    const { db, kv } = openKv();
    kv.set("s", "fits", "x".repeat(MAX_KV_VALUE_BYTES - 2));
    try {
      kv.set("s", "big", "x".repeat(MAX_KV_VALUE_BYTES));
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_TOO_LARGE")).toBe(true);
      expect((error as Error).message).toMatch(/s\/big.*blob/);
    }
    expect(kv.get("s", "big")).toBeUndefined();
    db.close();
  });

  it("refuses values and names that would not round-trip", () => {
    const { db, kv } = openKv();
    expect(() => kv.set("s", "k", undefined as never)).toThrow(/not JSON-serializable/);
    expect(() => kv.set("s", "k", 10n as never)).toThrow(/not JSON-serializable/);
    expect(() => kv.set("", "k", 1)).toThrow(/scope/);
    expect(() => kv.set("s", "", 1)).toThrow(/key/);
    db.close();
  });

  it("updates read-modify-write in one transaction", () => {
    const { db, kv } = openKv();
    for (let i = 0; i < 10; i++) kv.update<number>("c", "n", (n) => (n ?? 0) + 1);
    expect(kv.get("c", "n")).toBe(10);
    db.close();
  });
});

describe("prefixUpperBound", () => {
  it("bounds exactly the strings with the prefix, in SQLite's order", () => {
    const { db } = openKv();
    const compare = db.prepare<{ c: number }>("SELECT (? < ?) AS c");
    const below = (a: string, b: string) => compare.get(a, b)?.c === 1;
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme" }),
        fc.string({ unit: "grapheme" }),
        (prefix, rest) => {
          const upper = prefixUpperBound(prefix);
          if (upper === undefined) return;
          expect(below(prefix + rest, upper)).toBe(true);
        },
      ),
    );
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", minLength: 1 }),
        fc.string({ unit: "grapheme" }),
        (prefix, other) => {
          const upper = prefixUpperBound(prefix);
          if (upper === undefined || other.startsWith(prefix)) return;
          // A string without the prefix is either below the prefix or not below the bound.
          expect(below(other, prefix) || !below(other, upper)).toBe(true);
        },
      ),
    );
    db.close();
  });
});
