import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { corpusTranscripts, sessionIdOfFile } from "../../test-support/corpus.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { encodeJsonl, parseJsonl } from "../../transcript/jsonl-codec.js";
import { INLINE_BLOB_THRESHOLD, TranscriptStore } from "./transcript-store.js";

const tempDir = useTempDirs();

function open(): { db: Database; store: TranscriptStore } {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  return { db, store: new TranscriptStore(db, "main") };
}

const user = (text: string) => ({
  type: "message",
  message: { role: "user", content: [{ type: "text", text }], timestamp: 1 },
});

describe("TranscriptStore.append", () => {
  it("creates the session with a header, then chains events on the current leaf", () => {
    const { db, store } = open();
    const first = store.append("s1", user("hello"), { sessionKey: "agent:main:main", cwd: "/w" });
    const second = store.append("s1", user("again"));
    expect(first.seq).toBe(2);
    expect(second.seq).toBe(3);
    expect(first.event.parentId).toBeNull();
    expect(second.event.parentId).toBe(first.event.id);
    expect(Object.keys(second.event).slice(0, 4)).toEqual(["type", "id", "parentId", "timestamp"]);
    const rows = db
      .prepare<{ seq: number; event_json: string }>(
        `SELECT seq, event_json FROM transcript_events
         WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = 's1') ORDER BY seq`,
      )
      .all();
    const header = JSON.parse(rows[0]?.event_json ?? "{}");
    expect(header).toMatchObject({ type: "session", version: 3, id: "s1", cwd: "/w" });
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(db.prepare("SELECT session_key, leaf_override_id FROM sessions").get()).toEqual({
      session_key: "agent:main:main",
      leaf_override_id: null,
    });
    expect(
      db
        .prepare(
          "SELECT event_id, event_type, parent_id FROM transcript_events WHERE seq IN (1, 3) ORDER BY seq",
        )
        .all(),
    ).toEqual([
      { event_id: "s1", event_type: "session", parent_id: null },
      { event_id: second.event.id, event_type: "message", parent_id: first.event.id },
    ]);
    db.close();
  });

  it("gives new events 8-hex ids that follow the last one it generated, never one a caller chose", () => {
    const { db, store } = open();
    const next = (id: string) => (Number.parseInt(id, 16) + 1).toString(16).padStart(8, "0");
    const verbatim = { verbatim: true, ensureHeader: false } as const;
    const put = (sessionId: string, id: string) =>
      store.append(sessionId, { ...user(id), id, parentId: null }, verbatim);
    // After the header (named by the session) the first is drawn at random; then they follow.
    const first = store.append("t", user("a")).event.id;
    expect(first).toMatch(/^[0-9a-f]{8}$/);
    const more = store.appendMany("t", [user("b"), user("c")]).map((r) => r.event.id);
    const single = store.append("t", user("d")).event.id;
    expect([first, ...more, single]).toEqual([
      first,
      next(first),
      next(next(first)),
      next(more[1] ?? ""),
    ]);
    // A caller that numbers its own ids, between generated ones: each of its ids stays free.
    for (const id of ["00000001", "00000002", "00000003"]) {
      put("c", id);
      const generated = store.append("c", user(`after ${id}`)).event.id;
      expect(generated).toMatch(/^[0-9a-f]{8}$/);
      expect(generated).not.toBe(next(id));
    }
    // Another connection's append in between: the next id does not follow its id.
    const otherDb = openDatabase({ path: db.path, role: "agent", create: false });
    const theirs = new TranscriptStore(otherDb, "main").append("t", user("theirs")).event.id;
    otherDb.close();
    expect(store.append("t", user("mine")).event.id).not.toBe(next(theirs));
    const ids = db
      .prepare<{ n: number; distinct_ids: number }>(
        "SELECT count(*) AS n, count(DISTINCT session_no || '/' || event_id) AS distinct_ids FROM transcript_events",
      )
      .get();
    // 7 in t (its header, a-d, theirs, mine) and 6 in c.
    expect(ids).toEqual({ n: 13, distinct_ids: 13 });
    db.close();
  });

  it("branches from an explicit parent and refuses unknown parents", () => {
    const { db, store } = open();
    const a = store.append("s", user("a"));
    store.append("s", user("b"));
    const c = store.append("s", { ...user("c"), parentId: a.event.id });
    expect(c.event.parentId).toBe(a.event.id);
    const root = store.append("s", { ...user("root"), parentId: null });
    expect(root.event.parentId).toBeNull();
    try {
      store.append("s", { ...user("x"), parentId: "nope" });
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_NOT_FOUND")).toBe(true);
      expect((error as Error).message).toContain("nope");
    }
    expect(store.tail("s", 100)).toHaveLength(5);
    db.close();
  });

  it("returns the first event for a repeated idempotency key", () => {
    const { db, store } = open();
    const first = store.append("s", user("once"), { idempotencyKey: "k1" });
    const again = store.append("s", user("once, retried"), { idempotencyKey: "k1" });
    expect(again.deduplicated).toBe(true);
    expect(again.event).toEqual(first.event);
    const viaMessage = {
      type: "message",
      message: { role: "assistant", content: [], idempotencyKey: "k2" },
    };
    store.append("s", viaMessage);
    expect(store.append("s", viaMessage).deduplicated).toBe(true);
    expect(db.prepare("SELECT count(*) AS n FROM transcript_events").get()).toEqual({ n: 3 });
    db.close();
  });

  it("keeps imported records exactly, including absent parents and dangling ones", () => {
    const { db, store } = open();
    const records: TranscriptEvent[] = [
      { type: "session", version: 3, id: "other-id", timestamp: "2026-01-01T00:00:00.000Z" },
      {
        type: "message",
        id: "aa",
        timestamp: "2026-01-01T00:00:01.000Z",
        message: { role: "assistant", content: [], stopReason: "injected" },
      },
      {
        type: "message",
        id: "bb",
        parentId: "gone",
        timestamp: "2026-01-01T00:00:02.000Z",
        message: { role: "user", content: "x" },
      },
    ];
    store.appendMany("s", records, { verbatim: true });
    expect(store.read("s").map((e) => e.event)).toEqual(records);
    expect(Object.hasOwn(store.get("s", "aa")?.event ?? {}, "parentId")).toBe(false);
    expect(db.prepare("SELECT created_at FROM transcript_events WHERE seq = 2").get()).toEqual({
      created_at: Date.parse("2026-01-01T00:00:01.000Z"),
    });
    db.close();
  });

  it("deduplicates a replayed event id and refuses a different event under it", () => {
    const { db, store } = open();
    const record = {
      type: "custom",
      id: "c1",
      parentId: null,
      timestamp: "2026-01-01T00:00:00.000Z",
      data: { n: 1 },
    };
    store.append("s", record, { verbatim: true });
    expect(store.append("s", record, { verbatim: true }).deduplicated).toBe(true);
    expect(() => store.append("s", { ...record, data: { n: 2 } }, { verbatim: true })).toThrowError(
      expect.objectContaining({ code: "E_CONFLICT" }),
    );
    expect(() => store.append("s", { type: "session", id: "second-header" })).toThrowError(
      /already has a header/,
    );
    db.close();
  });

  it("moves large inline images to deduplicated blobs and restores them byte-identical", () => {
    const { db, store } = open();
    const data = Buffer.alloc(INLINE_BLOB_THRESHOLD * 2, 7).toString("base64");
    const image = (text: string) => ({
      type: "message",
      message: {
        role: "user",
        content: [
          { type: "text", text },
          { type: "image", data, mimeType: "image/png" },
        ],
      },
    });
    const a = store.append("s", image("look"));
    store.append("t", image("same picture"));
    const stored = db
      .prepare<{ event_json: string }>(
        `SELECT event_json FROM transcript_events
         WHERE seq = 2 AND session_no = (SELECT session_no FROM sessions WHERE session_id = 's')`,
      )
      .get();
    expect(stored?.event_json.length).toBeLessThan(600);
    expect(
      db.prepare("SELECT count(*) AS n, max(size_bytes) AS size FROM transcript_blobs").get(),
    ).toEqual({
      n: 1,
      size: data.length,
    });
    expect(db.prepare("SELECT count(*) AS n FROM transcript_blob_refs").get()).toEqual({ n: 2 });
    expect(store.get("s", a.event.id)?.event).toEqual(a.event);
    expect([...store.exportJsonl("s")][1]).toBe(`${JSON.stringify(a.event)}\n`);
    db.close();
  });

  it("appendMany merges ids stored before and within the batch and leaves the tail at its last event", () => {
    const { db, store } = open();
    const record = (id: string, parentId: string | null, n: number) => ({
      type: "custom",
      id,
      parentId,
      timestamp: `2099-01-01T00:00:0${n}.000Z`,
      data: { n },
    });
    store.appendMany("s", [record("a", null, 1), record("b", "a", 2)], { verbatim: true });
    const results = store.appendMany(
      "s",
      [record("b", "a", 2), record("c", "b", 3), record("c", "b", 3), record("d", "c", 4)],
      { verbatim: true },
    );
    expect(results.map((r) => [r.event.id, r.seq, r.deduplicated])).toEqual([
      ["b", 3, true],
      ["c", 4, false],
      ["c", 4, true],
      ["d", 5, false],
    ]);
    expect(
      db
        .prepare(
          "SELECT event_count, leaf_event_id, updated_at FROM agentstate_sessions_v1 WHERE session_id = 's'",
        )
        .get(),
    ).toEqual({
      event_count: 5,
      leaf_event_id: "d",
      updated_at: Date.parse("2099-01-01T00:00:04.000Z"),
    });
    // A different record under an id the batch already stored rolls the whole batch back.
    expect(() =>
      store.appendMany("s", [record("e", "d", 5), record("e", "d", 6)], { verbatim: true }),
    ).toThrowError(expect.objectContaining({ code: "E_CONFLICT" }));
    expect(() =>
      store.appendMany("s", [record("f", "d", 5), record("a", null, 9)], { verbatim: true }),
    ).toThrowError(expect.objectContaining({ code: "E_CONFLICT" }));
    expect(db.prepare("SELECT count(*) AS n FROM transcript_events").get()).toEqual({ n: 5 });
    expect(store.tail("s", 10).map((e) => e.event.id)).toEqual(["s", "a", "b", "c", "d"]);
    db.close();
  });

  it("reads ranges, tails and validates input", () => {
    const { db, store } = open();
    for (let i = 0; i < 30; i++) store.append("s", user(`m${i}`));
    expect(store.read("s", { afterSeq: 10, limit: 5 }).map((e) => e.seq)).toEqual([
      11, 12, 13, 14, 15,
    ]);
    expect(store.tail("s", 3).map((e) => e.seq)).toEqual([29, 30, 31]);
    expect(store.read("missing")).toEqual([]);
    expect(() => store.append("", user("x"))).toThrowError(
      expect.objectContaining({ code: "E_INVALID_ID" }),
    );
    expect(() => store.append("s", { type: "" })).toThrowError(/type/);
    expect(() => store.append("s", user("x"), { idempotent: true } as never)).toThrow(
      /Unknown append option/,
    );
    expect(() => store.tail("s", 0)).toThrow(/limit/);
    db.close();
  });

  it("reads the events one key prefix appended after a seq, and no one else's", () => {
    const { db, store } = open();
    const key = (k: string) => ({ idempotencyKey: k });
    store.append("s", user("earlier attempt"), key("r_1:0"));
    const tail = store.tail("s", 1)[0]?.seq ?? 0;
    store.append("s", user("other writer"), key("rx1:0"));
    store.append("s", user("no key"));
    store.append("s", user("first"), key("r_1:1"));
    store.append("s", user("other writer again"), key("r_10:0"));
    store.append("s", user("second"), key("r_1:2"));
    store.append("s", user("earlier attempt, retried"), key("r_1:0"));
    const read = store.readKeyed("s", "r_1:", tail);
    expect(read.map((e) => [e.seq, e.idempotencyKey])).toEqual([
      [5, "r_1:1"],
      [7, "r_1:2"],
    ]);
    expect(read[0]?.event).toMatchObject({ message: { content: [{ text: "first" }] } });
    expect(store.readKeyed("s", "r_1:").map((e) => e.seq)).toEqual([2, 5, 7]);
    expect(store.readKeyed("missing", "r_1:")).toEqual([]);
    db.close();
  });
});

describe("JSONL export", () => {
  it("reproduces every real transcript byte for byte after a verbatim import", () => {
    const files = corpusTranscripts();
    const { db, store } = open();
    for (const file of files) {
      const sessionId = `${sessionIdOfFile(file.name)}:${files.indexOf(file)}`;
      const parsed = parseJsonl(file.text);
      const events = parsed.flatMap((line) => (line.ok ? [line.event] : []));
      expect(events.length, file.name).toBe(parsed.length);
      store.appendMany(sessionId, events, { verbatim: true, ensureHeader: false });
      expect([...store.exportJsonl(sessionId)].join(""), file.name).toBe(file.text);
    }
    db.close();
  });
});

describe("JSONL export of generated transcripts", () => {
  it("reproduces generated legacy-shaped files after a verbatim import", () => {
    const { db, store } = open();
    const text = fc.string({ maxLength: 30 });
    const block = fc.oneof(
      fc.record({ type: fc.constant("text"), text }),
      fc.record({ type: fc.constant("thinking"), thinking: text, thinkingSignature: text }),
      fc.record({
        type: fc.constant("toolCall"),
        id: text,
        name: text,
        arguments: fc.dictionary(text, fc.jsonValue()),
      }),
      fc.record({
        type: fc.constant("image"),
        data: fc.base64String({ maxLength: 200 }),
        mimeType: fc.constant("image/png"),
      }),
    );
    const record = fc.record({
      type: fc.constantFrom("message", "custom", "model_change", "compaction", "something_new"),
      parent: fc.option(fc.constantFrom("none", "null", "prev"), { nil: undefined }),
      timestamp: fc.date({ noInvalidDate: true, min: new Date(0) }).map((d) => d.toISOString()),
      message: fc.record({
        role: fc.constantFrom("user", "assistant", "toolResult"),
        content: fc.array(block, { maxLength: 4 }),
      }),
      extra: fc.dictionary(
        fc
          .string({ minLength: 1, maxLength: 8 })
          .filter((k) => !["type", "id", "parentId", "timestamp", "message"].includes(k)),
        fc.jsonValue(),
        { maxKeys: 3 },
      ),
    });
    let n = 0;
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 25 }), (records) => {
        const sessionId = `gen-${n++}`;
        const events = records.map((r, i) => {
          const event: Record<string, unknown> = {
            type: r.type,
            id: `e${i.toString(16).padStart(7, "0")}`,
          };
          if (r.parent === "null" || (r.parent === "prev" && i === 0)) event.parentId = null;
          else if (r.parent === "prev")
            event.parentId = `e${(i - 1).toString(16).padStart(7, "0")}`;
          event.timestamp = r.timestamp;
          if (r.type === "message") event.message = r.message;
          Object.assign(event, r.extra);
          return JSON.parse(JSON.stringify(event)) as TranscriptEvent;
        });
        const header = {
          type: "session",
          version: 3,
          id: sessionId,
          timestamp: "2026-01-01T00:00:00.000Z",
        };
        const file = encodeJsonl([header as TranscriptEvent, ...events]);
        const parsed = parseJsonl(file).flatMap((line) => (line.ok ? [line.event] : []));
        store.appendMany(sessionId, parsed, { verbatim: true, ensureHeader: false });
        expect([...store.exportJsonl(sessionId)].join("")).toBe(file);
      }),
      { numRuns: 100 },
    );
    db.close();
  });
});

describe("TranscriptStore.events", () => {
  // A caller may consume the iterator slowly (an export piped to a slow disk, a library user
  // awaiting between events). A read transaction open all that time would keep every checkpoint
  // from restarting the WAL, which then grows with every write of every process.
  it("holds no read transaction open between events", () => {
    const { db, store } = open();
    for (let i = 0; i < 1200; i++) store.append("s1", user(`event ${i}`));
    const events = store.events("s1");
    expect(events.next().value?.seq).toBe(1);
    const writer = openDatabase({ path: db.path, role: "agent" });
    new TranscriptStore(writer, "main").append("s2", user("while the export runs"));
    // TRUNCATE cannot complete while any connection reads from an older snapshot of the WAL.
    writer.exec("PRAGMA busy_timeout = 100");
    expect(writer.checkpoint("TRUNCATE").busy).toBe(false);
    writer.close();
    const seqs = [1, ...Array.from(events, (stored) => stored.seq)];
    expect(seqs).toEqual(Array.from({ length: 1201 }, (_, i) => i + 1));
    db.close();
  });
});
