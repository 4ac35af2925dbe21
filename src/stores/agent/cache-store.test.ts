import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { CacheStore } from "./cache-store.js";

const tempDir = useTempDirs();

function open() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const clock = { now: 1_000_000 };
  const cache = new CacheStore(db, { clock: () => clock.now });
  return { db, cache, clock };
}

describe("CacheStore", () => {
  it("stores values and bytes, expires at exactly expiresAt, sweeps with one DELETE", () => {
    const { db, cache, clock } = open();
    const set = cache.set("models", "gpt", { value: { ctx: 128 }, ttlMs: 1000 });
    expect(set.expiresAt).toBe(1_001_000);
    cache.set("models", "blob", { data: Buffer.from([1, 2, 3]), expiresAt: 1_000_500 });
    cache.set("models", "forever", { value: "x", data: "bytes" });
    expect(cache.get("models", "gpt")?.value).toEqual({ ctx: 128 });
    expect(cache.get("models", "blob")?.data).toEqual(Buffer.from([1, 2, 3]));
    expect(cache.get("models", "blob")?.value).toBeUndefined();
    clock.now = 1_000_499;
    expect(cache.get("models", "blob")).toBeDefined();
    clock.now = 1_000_500;
    expect(cache.get("models", "blob")).toBeUndefined();
    expect(db.prepare("SELECT count(*) AS n FROM cache_entries").get()).toEqual({ n: 3 });
    expect(cache.sweepExpired()).toBe(1);
    expect(cache.sweepExpired(2_000_000)).toBe(1);
    expect(cache.get("models", "forever")).toMatchObject({ value: "x", expiresAt: null });
    expect(cache.sweepExpired(Number.MAX_SAFE_INTEGER)).toBe(0);
    db.close();
  });

  it("replaces, deletes and clears a scope", () => {
    const { db, cache } = open();
    cache.set("s", "k", { value: 1, ttlMs: 10 });
    cache.set("s", "k", { value: 2 });
    expect(cache.get("s", "k")).toMatchObject({ value: 2, expiresAt: null });
    cache.set("s", "k2", { value: 3 });
    cache.set("t", "k", { value: 4 });
    expect(cache.delete("s", "k")).toBe(true);
    expect(cache.delete("s", "k")).toBe(false);
    expect(cache.clearScope("s")).toBe(1);
    expect(cache.get("t", "k")?.value).toBe(4);
    db.close();
  });

  it("validates entries", () => {
    const { db, cache } = open();
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return isStateError(error) ? error.code : (error as Error).name;
      }
    };
    expect(code(() => cache.set("s", "k", {}))).toBe("E_INVALID_ARGUMENT");
    expect(code(() => cache.set("s", "k", { value: 1, ttlMs: 0 }))).toBe("E_INVALID_ARGUMENT");
    expect(code(() => cache.set("s", "k", { value: 1, ttlMs: 5, expiresAt: 9 }))).toBe(
      "E_INVALID_ARGUMENT",
    );
    expect(code(() => cache.set("", "k", { value: 1 }))).toBe("E_INVALID_ARGUMENT");
    expect(code(() => cache.set("s", "k", { value: 1, ttl: 5 } as never))).toBe("TypeError");
    db.close();
  });

  it("sweeps through the partial expiry index", () => {
    const { db } = open();
    const plan = db
      .prepare<{ detail: string }>(
        "EXPLAIN QUERY PLAN DELETE FROM cache_entries WHERE expires_at IS NOT NULL AND expires_at <= 5",
      )
      .all()
      .map((r) => r.detail)
      .join(" ");
    expect(plan).toMatch(
      /USING COVERING INDEX cache_entries_expiry|USING INDEX cache_entries_expiry/,
    );
    db.close();
  });

  it("sweep deletes exactly the expired rows and get agrees with it (property)", () => {
    const { db, cache, clock } = open();
    let round = 0;
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.integer({ min: 0, max: 100 }), { nil: null }), { maxLength: 40 }),
        fc.integer({ min: 0, max: 100 }),
        (expiries, at) => {
          const scope = `p${round++}`;
          clock.now = 0;
          expiries.forEach((e, i) => {
            cache.set(scope, `k${i}`, e === null ? { value: i } : { value: i, expiresAt: e });
          });
          clock.now = at;
          const live = expiries.map((_, i) => cache.get(scope, `k${i}`) !== undefined);
          expect(live).toEqual(expiries.map((e) => e === null || at < e));
          const expired = db
            .prepare("SELECT count(*) AS n FROM cache_entries WHERE expires_at <= ?")
            .get(at) as { n: number };
          expect(cache.sweepExpired(at)).toBe(expired.n);
          expect(expiries.map((_, i) => cache.get(scope, `k${i}`) !== undefined)).toEqual(live);
          cache.clearScope(scope);
          cache.sweepExpired(Number.MAX_SAFE_INTEGER);
        },
      ),
      { numRuns: 100 },
    );
    db.close();
  });
});
