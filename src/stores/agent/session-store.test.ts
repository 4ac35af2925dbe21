import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError, type StateErrorCode } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import {
  MAX_SESSION_ENTRY_BYTES,
  SESSION_ENTRY_COLUMNS,
  type SessionEntryData,
  SessionStore,
} from "./session-store.js";

const tempDir = useTempDirs();

function openSessions() {
  const path = join(tempDir(), "agent.sqlite");
  const db = openDatabase({ path, role: "agent" });
  return { db, path, sessions: new SessionStore(db) };
}

type Db = ReturnType<typeof openSessions>["db"];

function rows(db: Db) {
  return db
    .prepare<{ session_key: string; version: number; entry_json: string; updated_at: number }>(
      "SELECT session_key, version, entry_json, updated_at FROM session_entries ORDER BY session_key",
    )
    .all();
}

function expectStateError(fn: () => unknown, code: StateErrorCode, message?: RegExp): void {
  try {
    fn();
    expect.unreachable(`expected ${code}`);
  } catch (error) {
    expect(isStateError(error, code), String(error)).toBe(true);
    if (message) expect((error as Error).message).toMatch(message);
  }
}

/** The shape of a real openclaw `sessions.json` entry, with its bulky skills snapshot. */
function legacyEntry(bulk = 70_000): SessionEntryData {
  return {
    sessionId: "003d9e5b-51f2-496b-911f-3564cacac047",
    updatedAt: 1775632108242,
    systemSent: true,
    abortedLastRun: false,
    chatType: "group",
    model: "us.anthropic.claude-opus-4-6-v1",
    origin: {
      label: "telegram:group:@icattj",
      provider: "telegram",
      chatType: "group",
      from: "telegram:group:@icattj",
      to: "telegram:@icattj",
    },
    deliveryContext: { channel: "telegram", accountId: "default", threadId: null },
    displayName: "Équipe 🌿 «ночь» 東京",
    skillsSnapshot: {
      prompt: "<available_skills>\n  <skill>ü 🌿 …</skill>\n".repeat(Math.ceil(bulk / 45)),
      skills: [{ name: "clawhub", primaryEnv: null }, { name: "github" }],
      version: 3,
    },
  };
}

describe("SessionStore", () => {
  it("declares exactly the columns of session_entries", () => {
    const { db } = openSessions();
    const columns = db
      .prepare<{ name: string }>("PRAGMA table_info(session_entries)")
      .all()
      .map((c) => c.name);
    expect([...SESSION_ENTRY_COLUMNS].sort()).toEqual(columns.sort());
    db.close();
  });

  it("round-trips a realistic legacy entry and keeps its updatedAt as updated_at", () => {
    const { db, sessions } = openSessions();
    const entry = legacyEntry();
    const written = sessions.upsert("agent:main:telegram:group:@icattj", entry);
    expect(written).toEqual({
      sessionKey: "agent:main:telegram:group:@icattj",
      entry,
      version: 1,
      updatedAt: 1775632108242,
    });
    expect(sessions.get("agent:main:telegram:group:@icattj")).toEqual(written);
    expect(sessions.get("agent:main:main")).toBeUndefined();
    const [row] = rows(db);
    expect(row?.version).toBe(1);
    expect(row?.updated_at).toBe(1775632108242);
    expect(JSON.parse(row?.entry_json ?? "")).toEqual(entry);
    expect(sessions.delete("agent:main:telegram:group:@icattj")).toBe(true);
    expect(sessions.delete("agent:main:telegram:group:@icattj")).toBe(false);
    expect(rows(db)).toEqual([]);
    db.close();
  });

  it("increments the version on every upsert and stamps entries without updatedAt", () => {
    const { db, sessions } = openSessions();
    const before = Date.now();
    expect(sessions.upsert("k", { a: 1 }).version).toBe(1);
    const second = sessions.upsert("k", { b: 2 });
    expect(second.version).toBe(2);
    expect(second.updatedAt).toBeGreaterThanOrEqual(before);
    expect(sessions.upsert("k", { updatedAt: 12.9 }).updatedAt).toBe(12);
    expect(sessions.upsert("k", { updatedAt: "yesterday" }).updatedAt).toBeGreaterThanOrEqual(
      before,
    );
    expect(sessions.upsert("k", { updatedAt: 1e300 }).updatedAt).toBeGreaterThanOrEqual(before);
    expect(rows(db).map((r) => [r.version, r.entry_json])).toEqual([[5, '{"updatedAt":1e+300}']]);
    expect(sessions.upsert("other", {}).version).toBe(1);
    db.close();
  });

  it("patches by shallow merge, creating the entry when missing", () => {
    const { db, sessions } = openSessions();
    const created = sessions.patch("k", { sessionId: "s1", origin: { from: "a" } });
    expect(created).toMatchObject({
      version: 1,
      entry: { sessionId: "s1", origin: { from: "a" } },
    });
    const merged = sessions.patch("k", { origin: { to: "b" }, chatType: "direct" });
    expect(merged.entry).toEqual({ sessionId: "s1", origin: { to: "b" }, chatType: "direct" });
    // A field set to undefined is dropped by JSON: the way to remove one.
    expect(sessions.patch("k", { chatType: undefined }).entry).toEqual({
      sessionId: "s1",
      origin: { to: "b" },
    });
    expect(rows(db).map((r) => [r.version, r.entry_json])).toEqual([
      [3, '{"sessionId":"s1","origin":{"to":"b"}}'],
    ]);
    db.close();
  });

  it("patches with a function that gets a fresh copy, or undefined", () => {
    const { db, sessions } = openSessions();
    const seen: (SessionEntryData | undefined)[] = [];
    const bump = (e: SessionEntryData | undefined) => {
      seen.push(structuredClone(e));
      return { ...e, counter: Number(e?.counter ?? 0) + 1 };
    };
    sessions.patch("k", bump);
    const second = sessions.patch("k", bump);
    expect(seen).toEqual([undefined, { counter: 1 }]);
    expect(second).toMatchObject({ version: 2, entry: { counter: 2 } });
    sessions.patch("k", (e) => {
      if (e) e.nested = { mutated: true };
      return e ?? {};
    });
    expect(sessions.get("k")?.entry).toEqual({ counter: 2, nested: { mutated: true } });
    expect(rows(db)[0]?.version).toBe(3);
    db.close();
  });

  it("refuses a stale expectedVersion with E_CONFLICT and writes nothing", () => {
    const { db, sessions } = openSessions();
    expectStateError(() => sessions.patch("k", { a: 1 }, { expectedVersion: 1 }), "E_CONFLICT");
    expect(sessions.patch("k", { a: 1 }, { expectedVersion: 0 }).version).toBe(1);
    expect(sessions.patch("k", { a: 2 }, { expectedVersion: 1 }).version).toBe(2);
    const fn = vi.fn((e: SessionEntryData | undefined) => ({ ...e, a: 3 }));
    try {
      sessions.patch("k", fn, { expectedVersion: 1 });
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_CONFLICT")).toBe(true);
      expect((error as Error).message).toMatch(/"k" is at version 2, expected version 1/);
      expect((error as { details: unknown }).details).toEqual({
        sessionKey: "k",
        expectedVersion: 1,
        actualVersion: 2,
      });
    }
    expect(fn).not.toHaveBeenCalled();
    expectStateError(
      () => sessions.patch("k", { a: 4 }, { expectedVersion: 0 }),
      "E_CONFLICT",
      /is at version 2/,
    );
    expect(rows(db).map((r) => [r.version, r.entry_json])).toEqual([[2, '{"a":2}']]);
    db.close();
  });

  it("writes nothing when the function throws, and propagates its error", () => {
    const { db, sessions } = openSessions();
    sessions.upsert("k", { a: 1 });
    const boom = new Error("boom");
    expect(() =>
      sessions.patch("k", (e) => {
        if (e) e.a = 2;
        throw boom;
      }),
    ).toThrow(boom);
    expect(() => sessions.patch("new", () => ({ big: 10n as never }))).toThrow(
      /not JSON-serializable/,
    );
    expectStateError(
      () => sessions.patch("k", () => [1, 2] as never),
      "E_INVALID_ARGUMENT",
      /"k" must be a plain JSON object/,
    );
    expect(rows(db).map((r) => [r.session_key, r.version, r.entry_json])).toEqual([
      ["k", 1, '{"a":1}'],
    ]);
    db.close();
  });

  it("rejects an async patch function with a TypeError and writes nothing", async () => {
    const { db, sessions } = openSessions();
    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    const asyncFn = async () => {
      throw new Error("async failure");
    };
    expect(() => sessions.patch("k", asyncFn as never)).toThrow(TypeError);
    expect(() => sessions.patch("k", (async () => ({})) as never)).toThrow(
      /Expected a synchronous patch function for session "k"/,
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    process.off("unhandledRejection", unhandled);
    expect(unhandled).not.toHaveBeenCalled();
    expect(rows(db)).toEqual([]);
    db.close();
  });

  it("retries a lost race, and wins the last attempt under the write lock", () => {
    const { db, path, sessions } = openSessions();
    const rivalDb = openDatabase({ path, role: "agent" });
    // The rival gives up at once when the lock is held instead of waiting 30 s.
    rivalDb.exec("PRAGMA busy_timeout = 0");
    const rival = new SessionStore(rivalDb);
    sessions.upsert("k", { counter: 0, rival: 0 });
    let calls = 0;
    let rivalBlocked = 0;
    const result = sessions.patch(
      "k",
      (e) => {
        calls++;
        try {
          rival.patch("k", (r) => ({ ...r, rival: Number(r?.rival) + 1 }));
        } catch (error) {
          if (!isStateError(error, "E_BUSY")) throw error;
          rivalBlocked++;
        }
        return { ...e, counter: Number(e?.counter) + 1 };
      },
      { maxAttempts: 3 },
    );
    // Two optimistic attempts lost to the rival; the third held the lock, so the rival got E_BUSY.
    expect([calls, rivalBlocked]).toEqual([3, 1]);
    expect(result).toMatchObject({ version: 4, entry: { counter: 1, rival: 2 } });
    expect(rows(db).map((r) => [r.version, JSON.parse(r.entry_json)])).toEqual([
      [4, { counter: 1, rival: 2 }],
    ]);
    rivalDb.close();
    db.close();
  });

  it("lists most recently updated first, ties by key descending", () => {
    const { db, sessions } = openSessions();
    sessions.upsert("b", { updatedAt: 10 });
    sessions.upsert("a", { updatedAt: 10 });
    sessions.upsert("c", { updatedAt: 5 });
    sessions.upsert("d", { updatedAt: 20 });
    const page = sessions.list();
    expect(page.entries.map((e) => [e.sessionKey, e.updatedAt])).toEqual([
      ["d", 20],
      ["b", 10],
      ["a", 10],
      ["c", 5],
    ]);
    expect(page.nextCursor).toBeNull();
    expect(page.entries[0]).toEqual(sessions.get("d"));
    expect(sessions.list({ updatedSince: 10 }).entries.map((e) => e.sessionKey)).toEqual([
      "d",
      "b",
      "a",
    ]);
    expect(sessions.list({ updatedSince: 21 }).entries).toEqual([]);
    db.close();
  });

  it("filters by prefix literally: % and _ are not wildcards", () => {
    const { db, sessions } = openSessions();
    const keys = [
      "agent:%x",
      "agent:_y",
      "agent:ax",
      "agent:by",
      "agent%",
      "agenté",
      "b",
      "\u{10FFFF}\u{10FFFF}a",
    ];
    for (const [i, key] of keys.entries()) sessions.upsert(key, { updatedAt: i });
    const listed = (prefix: string) => sessions.list({ prefix }).entries.map((e) => e.sessionKey);
    expect(listed("agent:%")).toEqual(["agent:%x"]);
    expect(listed("agent:_")).toEqual(["agent:_y"]);
    expect(listed("agent%")).toEqual(["agent%"]);
    expect(listed("agent:")).toEqual(["agent:by", "agent:ax", "agent:_y", "agent:%x"]);
    expect(listed("agent")).toHaveLength(6);
    expect(listed("agenté")).toEqual(["agenté"]);
    expect(listed("\u{10FFFF}")).toEqual(["\u{10FFFF}\u{10FFFF}a"]);
    expect(listed("zzz")).toEqual([]);
    expect(listed("")).toHaveLength(keys.length);
    db.close();
  });

  it("pages through 250 entries, visiting each exactly once", () => {
    const { db, sessions } = openSessions();
    db.tx(() => {
      for (let i = 0; i < 250; i++) {
        // Many equal timestamps, so pages must break ties by key.
        sessions.upsert(`agent:main:s${String(i).padStart(3, "0")}`, { updatedAt: i % 7 });
      }
    });
    for (const limit of [1, 7, 50, 100, 250, 1000]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = sessions.list({ limit, cursor });
        seen.push(...page.entries.map((e) => e.sessionKey));
        // Full pages until the last, which is never empty: no cursor points past the end.
        if (page.nextCursor) expect(page.entries).toHaveLength(limit);
        else expect(page.entries.length).toBeGreaterThan(0);
        cursor = page.nextCursor;
        pages++;
      } while (cursor !== null);
      expect(pages).toBe(Math.ceil(250 / limit));
      expect(new Set(seen).size).toBe(250);
      expect(seen).toEqual(sessions.list({ limit: 1000 }).entries.map((e) => e.sessionKey));
    }
    const firstPage = sessions.list({ prefix: "agent:main:s1", limit: 40 });
    expect(firstPage.entries).toHaveLength(40);
    const rest = sessions.list({
      prefix: "agent:main:s1",
      limit: 60,
      cursor: firstPage.nextCursor,
    });
    expect(rest.entries).toHaveLength(60);
    expect(rest.nextCursor).toBeNull();
    db.close();
  });

  it("pages through any set of keys as one sorted list (property)", () => {
    const { db, sessions } = openSessions();
    const unit = fc.constantFrom("a", "b", "%", "_", ":", "é", "😀", "\u{E000}", "\u{10FFFF}");
    const key = fc.string({ unit, minLength: 1, maxLength: 5 });
    // SQLite compares TEXT as UTF-8 bytes (code point order), not as UTF-16 units like JS `<`.
    const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ key, updatedAt: fc.integer({ min: 0, max: 6 }) }), {
          selector: (e) => e.key,
          maxLength: 40,
        }),
        fc.option(fc.string({ unit, maxLength: 2 }), { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
        fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 5 }),
        (stored, prefix, updatedSince, limits) => {
          db.exec("DELETE FROM session_entries");
          for (const e of stored) sessions.upsert(e.key, { updatedAt: e.updatedAt });
          const expected = stored
            .filter((e) => e.key.startsWith(prefix ?? "") && e.updatedAt >= (updatedSince ?? 0))
            .sort((x, y) => y.updatedAt - x.updatedAt || byBytes(y.key, x.key))
            .map((e) => e.key);
          const seen: string[] = [];
          let cursor: string | null = null;
          for (let i = 0; i === 0 || cursor !== null; i++) {
            const limit = limits[i % limits.length];
            const page = sessions.list({ prefix, updatedSince, limit, cursor });
            seen.push(...page.entries.map((e) => e.sessionKey));
            cursor = page.nextCursor;
            expect(i).toBeLessThanOrEqual(stored.length);
          }
          expect(seen).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
    db.close();
  });

  it("walks the updated_at index for every list query, never sorting in a temp B-tree", () => {
    const path = join(tempDir(), "agent.sqlite");
    const db = openDatabase({ path, role: "agent" });
    const prepare = vi.spyOn(db, "prepare");
    new SessionStore(db);
    const listQueries = prepare.mock.calls.map(([sql]) => sql).filter((s) => /ORDER BY/.test(s));
    prepare.mockRestore();
    expect(listQueries).toHaveLength(2);
    const params = {
      since: 0,
      prefix: "",
      upper: null,
      afterAt: 9,
      afterKey: "k",
      limit: 10,
      conversation: null,
    };
    const binds = [
      params,
      { ...params, prefix: "agent:", upper: "agent;" },
      { ...params, conversation: "c1" },
    ];
    for (const sql of listQueries) {
      for (const bind of binds) {
        const plan = db
          .prepare<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
          .all(bind)
          .map((r) => r.detail)
          .join("\n");
        expect(plan).toMatch(/USING INDEX session_entries_updated/);
        expect(plan).not.toMatch(/TEMP B-TREE/);
      }
    }
    db.close();
  });

  it("refuses malformed cursors", () => {
    const { db, sessions } = openSessions();
    for (let i = 0; i < 3; i++) sessions.upsert(`k${i}`, { updatedAt: i });
    const cursor = sessions.list({ limit: 1 }).nextCursor ?? "";
    expect(sessions.list({ cursor }).entries.map((e) => e.sessionKey)).toEqual(["k1", "k0"]);
    const bad = [
      "",
      "not a cursor!",
      `${cursor}!`,
      Buffer.from("[1]").toString("base64url"),
      Buffer.from('["1","k"]').toString("base64url"),
      Buffer.from('{"a":1}').toString("base64url"),
      Buffer.from("[1.5,").toString("base64url"),
      42 as never,
    ];
    for (const c of bad) {
      expectStateError(() => sessions.list({ cursor: c }), "E_INVALID_ARGUMENT", /cursor/);
    }
    db.close();
  });

  it("refuses invalid keys, entries and options by name", () => {
    const { db, sessions } = openSessions();
    for (const key of ["", "x".repeat(513), "bad\uD800key", 7 as never, null as never]) {
      expectStateError(() => sessions.upsert(key, {}), "E_INVALID_ARGUMENT", /session key/);
      expectStateError(() => sessions.get(key), "E_INVALID_ARGUMENT", /session key/);
      expectStateError(() => sessions.patch(key, {}), "E_INVALID_ARGUMENT", /session key/);
      expectStateError(() => sessions.delete(key), "E_INVALID_ARGUMENT", /session key/);
    }
    expect(sessions.upsert("x".repeat(512), {}).version).toBe(1);
    for (const entry of [[], null, "text", 1, new Date(0), { toJSON: () => [1] }]) {
      expectStateError(
        () => sessions.upsert("k", entry as never),
        "E_INVALID_ARGUMENT",
        /session entry "k" must be a plain JSON object/,
      );
    }
    expectStateError(() => sessions.upsert("k", { n: 1n as never }), "E_INVALID_ARGUMENT");
    expect(() => sessions.patch("k", 5 as never)).toThrow(/Expected a patch object or a function/);
    expect(() => sessions.patch("k", {}, { retries: 3 } as never)).toThrow(
      /Unknown option.*retries/,
    );
    expect(() => sessions.list({ limt: 3 } as never)).toThrow(/Unknown option.*limt/);
    expectStateError(() => sessions.patch("k", {}, { maxAttempts: 0 }), "E_INVALID_ARGUMENT");
    expectStateError(() => sessions.patch("k", {}, { expectedVersion: -1 }), "E_INVALID_ARGUMENT");
    expectStateError(() => sessions.list({ limit: 0 }), "E_INVALID_ARGUMENT", /limit/);
    expectStateError(() => sessions.list({ limit: 1001 }), "E_INVALID_ARGUMENT", /limit/);
    expectStateError(() => sessions.list({ updatedSince: Number.NaN }), "E_INVALID_ARGUMENT");
    expectStateError(() => sessions.list({ prefix: 3 as never }), "E_INVALID_ARGUMENT");
    expect(rows(db).map((r) => r.session_key)).toEqual(["x".repeat(512)]);
    db.close();
  });

  it("accepts entries up to 1 MiB of JSON and refuses larger ones naming the key", () => {
    const { db, sessions } = openSessions();
    const fits = { s: "x".repeat(MAX_SESSION_ENTRY_BYTES - 8) };
    expect(JSON.stringify(fits).length).toBe(MAX_SESSION_ENTRY_BYTES);
    expect(sessions.upsert("big", fits).version).toBe(1);
    expectStateError(
      () => sessions.upsert("too-big", { s: "x".repeat(MAX_SESSION_ENTRY_BYTES) }),
      "E_TOO_LARGE",
      /"too-big" is \d+ bytes of JSON; the limit is 1048576/,
    );
    expectStateError(
      () => sessions.patch("big", (e) => ({ ...e, more: "y" })),
      "E_TOO_LARGE",
      /"big"/,
    );
    expect(rows(db).map((r) => [r.session_key, r.version])).toEqual([["big", 1]]);
    db.close();
  });

  it("reports a row whose JSON is not an object as corrupt", () => {
    const { db, sessions } = openSessions();
    db.prepare(
      `INSERT INTO session_entries (session_key, entry_json, version, updated_at)
       VALUES ('k', '[1]', 1, 0), ('j', '{', 1, 0)`,
    ).run();
    expectStateError(() => sessions.get("k"), "E_CORRUPT", /"k" is not a JSON object/);
    expectStateError(() => sessions.patch("j", {}), "E_CORRUPT", /"j"/);
    expectStateError(() => sessions.list(), "E_CORRUPT");
    db.close();
  });

  it("points an entry at its conversation when created, patched or upserted, and lists by it", () => {
    const { db, sessions } = openSessions();
    const column = () =>
      db
        .prepare<{ session_key: string; conversation_id: string | null }>(
          "SELECT session_key, conversation_id FROM session_entries ORDER BY session_key",
        )
        .all()
        .map((r) => [r.session_key, r.conversation_id]);
    expect(sessions.patch("a", { updatedAt: 1 }, { conversationId: "conv-1" })).toMatchObject({
      version: 1,
      conversationId: "conv-1",
    });
    sessions.upsert("b", { updatedAt: 2 }, { conversationId: "conv-1" });
    sessions.upsert("c", { updatedAt: 3 });
    expect(column()).toEqual([
      ["a", "conv-1"],
      ["b", "conv-1"],
      ["c", null],
    ]);
    // Absent: kept through a patch and an upsert; null clears; another id moves the entry.
    expect(sessions.patch("a", { updatedAt: 4 }).conversationId).toBe("conv-1");
    expect(sessions.upsert("b", { updatedAt: 5 }).conversationId).toBe("conv-1");
    expect(sessions.patch("c", { updatedAt: 6 }, { conversationId: "conv-2" }).conversationId).toBe(
      "conv-2",
    );
    sessions.upsert("a", { updatedAt: 7 }, { conversationId: null });
    expect(column()).toEqual([
      ["a", null],
      ["b", "conv-1"],
      ["c", "conv-2"],
    ]);
    expect(sessions.get("b")).toMatchObject({ conversationId: "conv-1", version: 2 });
    expect(sessions.get("a")).not.toHaveProperty("conversationId");
    const listed = (options: object) =>
      sessions.list(options).entries.map((e) => [e.sessionKey, e.conversationId ?? null]);
    expect(listed({})).toEqual([
      ["a", null],
      ["c", "conv-2"],
      ["b", "conv-1"],
    ]);
    expect(listed({ conversationId: "conv-1" })).toEqual([["b", "conv-1"]]);
    expect(listed({ conversationId: "conv-2", prefix: "c" })).toEqual([["c", "conv-2"]]);
    expect(listed({ conversationId: "conv-2", prefix: "b" })).toEqual([]);
    expect(listed({ conversationId: "none" })).toEqual([]);
    db.close();
  });

  it("pages through one conversation's entries by the updated_at index", () => {
    const { db, sessions } = openSessions();
    for (let i = 0; i < 30; i++) {
      sessions.upsert(`k${i}`, { updatedAt: i }, { conversationId: i % 3 === 0 ? "c" : "d" });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = sessions.list({ conversationId: "c", limit: 4, cursor });
      seen.push(...page.entries.map((e) => e.sessionKey));
      cursor = page.nextCursor;
    } while (cursor !== null);
    const expected = Array.from({ length: 10 }, (_, n) => `k${27 - 3 * n}`);
    expect(seen).toEqual(expected);
    db.close();
  });

  it("refuses a conversation id that is not well-formed text, and writes nothing", () => {
    const { db, sessions } = openSessions();
    for (const bad of ["", 7, "x".repeat(257), "\ud800"]) {
      expectStateError(
        () => sessions.upsert("k", {}, { conversationId: bad as string }),
        "E_INVALID_ARGUMENT",
        /conversation id/,
      );
      expectStateError(
        () => sessions.patch("k", {}, { conversationId: bad as string }),
        "E_INVALID_ARGUMENT",
      );
      expectStateError(
        () => sessions.list({ conversationId: bad as string }),
        "E_INVALID_ARGUMENT",
      );
    }
    expect(() => sessions.upsert("k", {}, { conversation: "x" } as object)).toThrow(/conversation/);
    expect(rows(db)).toEqual([]);
    db.close();
  });
});
