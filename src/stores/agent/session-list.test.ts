import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import type { JsonValue } from "../json.js";
import { filteredListSql, SESSION_SORT_KEYS, type SessionSortKey } from "./session-query.js";
import { type SessionEntryData, type SessionListOptions, SessionStore } from "./session-store.js";

const tempDir = useTempDirs();

function openSessions() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  return { db, sessions: new SessionStore(db) };
}

// --- The oracle: the list semantics computed in JS from the entry JSON alone. ---

const text = (value: JsonValue | undefined) => (typeof value === "string" ? value : "");
const firstText = (...values: (JsonValue | undefined)[]) =>
  values.map(text).find((v) => v !== "") ?? "";
const firstInteger = (fallback: number, ...values: (JsonValue | undefined)[]) =>
  (values.find((v) => Number.isSafeInteger(v)) as number | undefined) ?? fallback;

interface Fields {
  status: string;
  label: string;
  channel: string;
  model: string;
  parentSessionKey: string;
  archived: boolean;
  pinned: boolean;
  activity: number;
}

function fieldsOf(entry: SessionEntryData, updatedAt: number): Fields {
  return {
    status: text(entry.status),
    label: text(entry.label),
    channel: firstText(entry.channel, entry.lastChannel),
    model: text(entry.model),
    parentSessionKey: firstText(entry.parentSessionKey, entry.spawnedBy),
    archived: typeof entry.archivedAt === "number",
    pinned: typeof entry.pinnedAt === "number",
    activity: firstInteger(updatedAt, entry.lastActivityAt, entry.lastInteractionAt),
  };
}

const SORT_FIELD: Record<Exclude<SessionSortKey, "updated">, keyof Fields> = {
  activity: "activity",
  status: "status",
  label: "label",
  channel: "channel",
  model: "model",
  parent: "parentSessionKey",
};

// SQLite compares TEXT as UTF-8 bytes (code point order), not as UTF-16 units like JS `<`.
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const compare = (a: string | number, b: string | number) =>
  typeof a === "number" && typeof b === "number" ? a - b : byBytes(String(a), String(b));

interface Row {
  key: string;
  updatedAt: number;
  fields: Fields;
}

function expectedKeys(rows: Row[], options: SessionListOptions, sort: SessionSortKey): string[] {
  const filters = ["status", "label", "channel", "model", "parentSessionKey", "archived", "pinned"];
  const matches = (row: Row) =>
    filters.every((name) => {
      const wanted = options[name as keyof SessionListOptions];
      return wanted === undefined || row.fields[name as keyof Fields] === wanted;
    });
  const sortValue = (row: Row) => (sort === "updated" ? 0 : row.fields[SORT_FIELD[sort]]) as number;
  return rows
    .filter(matches)
    .sort(
      (x, y) =>
        compare(sortValue(y), sortValue(x)) || y.updatedAt - x.updatedAt || byBytes(y.key, x.key),
    )
    .map((row) => row.key);
}

/** Every row as stored: the JSON must be what the model wrote; the fields come from it alone. */
function storedRows(db: ReturnType<typeof openSessions>["db"], model: Map<string, object>): Row[] {
  const rows = db
    .prepare<{ session_key: string; entry_json: string; updated_at: number }>(
      "SELECT session_key, entry_json, updated_at FROM session_entries",
    )
    .all();
  expect(new Map(rows.map((r) => [r.session_key, JSON.parse(r.entry_json)]))).toEqual(model);
  return rows.map((r) => ({
    key: r.session_key,
    updatedAt: r.updated_at,
    fields: fieldsOf(JSON.parse(r.entry_json), r.updated_at),
  }));
}

// --- Generators: the real field values, plus absent, null, wrong-typed and unicode ones. ---

// A small pool, so that filters match often; code points beyond the BMP and U+10FFFF test the
// byte order.
const word = fc.constantFrom(
  "done",
  "failed",
  "Z",
  "a",
  "é",
  "😀",
  "\u{10FFFF}",
  "東 a",
  "agent:main:x",
);
const wrong = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 5 }),
  fc.constant(""),
  fc.constant<JsonValue>(["done"]),
  fc.constant<JsonValue>({ status: "done" }),
);
const textField = fc.oneof({ arbitrary: word, weight: 3 }, { arbitrary: wrong, weight: 2 });
const time = fc.oneof(
  fc.integer({ min: 0, max: 6 }),
  fc.constantFrom(1.5, 2 ** 53, -(2 ** 53) - 2, 1e300),
  wrong,
);
const FIELD_NAMES = [
  "status",
  "label",
  "channel",
  "lastChannel",
  "model",
  "parentSessionKey",
  "spawnedBy",
] as const;
const entry = fc.record(
  {
    updatedAt: fc.integer({ min: 0, max: 6 }),
    ...Object.fromEntries(FIELD_NAMES.map((name) => [name, textField])),
    archivedAt: time,
    pinnedAt: time,
    lastActivityAt: time,
    lastInteractionAt: time,
  },
  { requiredKeys: ["updatedAt"] },
) as fc.Arbitrary<SessionEntryData>;
/** A patch: fields to set, or to remove (undefined). */
const patch = fc.dictionary(
  fc.constantFrom(...FIELD_NAMES, "archivedAt", "pinnedAt", "lastActivityAt", "updatedAt"),
  fc.option(fc.oneof(textField, time), { nil: undefined }),
  { maxKeys: 3 },
);
const key = fc.constantFrom("a", "b", "c", "d", "é", "😀", "agent:main:x", "agent:main:y");
const write: fc.Arbitrary<WriteOp> = fc.oneof(
  fc.record({ op: fc.constant("upsert" as const), key, entry }),
  fc.record({ op: fc.constant("patch" as const), key, patch }),
  fc.record({ op: fc.constant("delete" as const), key }),
);
/** A list asks for one or two filters at most: with more, almost nothing would match. */
const query = fc
  .record({
    sort: fc.constantFrom(...SESSION_SORT_KEYS),
    texts: fc.subarray(["status", "label", "channel", "model", "parentSessionKey"] as const, {
      maxLength: 2,
    }),
    value: word,
    archived: fc.option(fc.boolean(), { nil: undefined }),
    pinned: fc.option(fc.boolean(), { nil: undefined }),
  })
  .map(({ sort, texts, value, archived, pinned }): SessionListOptions => {
    const options: SessionListOptions = {
      sort,
      ...Object.fromEntries(texts.map((t) => [t, value])),
    };
    if (archived !== undefined) options.archived = archived;
    if (pinned !== undefined && texts.length < 2) options.pinned = pinned;
    return options;
  });

type WriteOp =
  | { op: "upsert"; key: string; entry: SessionEntryData }
  | { op: "patch"; key: string; patch: Record<string, JsonValue | undefined> }
  | { op: "delete"; key: string };

function applyWrite(sessions: SessionStore, model: Map<string, object>, w: WriteOp) {
  if (w.op === "delete") {
    sessions.delete(w.key);
    model.delete(w.key);
  } else if (w.op === "upsert") {
    sessions.upsert(w.key, w.entry);
    model.set(w.key, JSON.parse(JSON.stringify(w.entry)));
  } else {
    sessions.patch(w.key, w.patch as Partial<SessionEntryData>);
    const next = { ...model.get(w.key), ...w.patch };
    model.set(w.key, JSON.parse(JSON.stringify(next)));
  }
}

function pageThrough(sessions: SessionStore, options: SessionListOptions, limit: number) {
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i === 0 || cursor !== null; i++) {
    const page = sessions.list({ ...options, limit, cursor });
    seen.push(...page.entries.map((e) => e.sessionKey));
    cursor = page.nextCursor;
    expect(i).toBeLessThan(20);
  }
  return seen;
}

describe("SessionStore.list filters and sorts", () => {
  it("equals the same filter and sort computed over the entry JSON (model)", () => {
    const { db, sessions } = openSessions();
    fc.assert(
      fc.property(
        fc.array(write, { maxLength: 30 }),
        fc.array(query, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 4 }),
        (writes, queries, limit) => {
          db.exec("DELETE FROM session_entries");
          const model = new Map<string, object>();
          for (const w of writes) applyWrite(sessions, model, w);
          const rows = storedRows(db, model);
          for (const options of queries) {
            const expected = expectedKeys(rows, options, options.sort ?? "updated");
            expect(pageThrough(sessions, options, limit), JSON.stringify(options)).toEqual(
              expected,
            );
          }
        },
      ),
      { numRuns: 150 },
    );
    db.close();
  });

  it("filters by the fields of a real subagent entry and keeps its JSON byte for byte", () => {
    const { db, sessions } = openSessions();
    const real = {
      sessionId: "7c1d",
      updatedAt: 1775632108242,
      status: "failed",
      channel: "whatsapp",
      lastChannel: "whatsapp",
      label: "uiux-agent",
      spawnedBy: "agent:main:main",
      model: "us.anthropic.claude-opus-4-6-v1",
    };
    sessions.upsert("agent:main:subagent:1", real);
    sessions.upsert("agent:main:main", { sessionId: "m", updatedAt: 1, lastChannel: "telegram" });
    const keys = (options: SessionListOptions) =>
      sessions.list(options).entries.map((e) => e.sessionKey);
    expect(keys({ parentSessionKey: "agent:main:main", status: "failed" })).toEqual([
      "agent:main:subagent:1",
    ]);
    expect(keys({ channel: "telegram" })).toEqual(["agent:main:main"]);
    expect(keys({ archived: false, sort: "label" })).toEqual([
      "agent:main:subagent:1",
      "agent:main:main",
    ]);
    const json = db.prepare<{ j: string }>("SELECT entry_json AS j FROM session_entries").all();
    expect(json.map((r) => r.j)).toContain(JSON.stringify(real));
    db.close();
  });

  it("rejects an unknown sort, a cursor of another sort and malformed filters", () => {
    const { db, sessions } = openSessions();
    for (const k of ["a", "b", "c"]) sessions.upsert(k, { updatedAt: 1, label: k });
    const { nextCursor } = sessions.list({ sort: "label", limit: 1 });
    const bad: SessionListOptions[] = [
      { sort: "size" as SessionSortKey },
      { sort: "activity", cursor: nextCursor },
      { cursor: nextCursor },
      { status: "" },
      { label: "\uD800" },
      { archived: 1 as unknown as boolean },
      { model: 3 as unknown as string },
    ];
    for (const options of bad) {
      let error: unknown;
      try {
        sessions.list(options);
      } catch (caught) {
        error = caught;
      }
      expect(isStateError(error, "E_INVALID_ARGUMENT"), JSON.stringify(options)).toBe(true);
    }
    expect(sessions.list({ sort: "label", cursor: nextCursor }).entries).toHaveLength(2);
    db.close();
  });
});

describe("the query plan of a filtered or sorted list", () => {
  const FILTERS = {
    status: "session_entries_by_status",
    label: "session_entries_by_label",
    channel: "session_entries_by_channel",
    model: "session_entries_by_model",
    parentSessionKey: "session_entries_by_parent",
    archived: "session_entries_by_archived",
    pinned: "session_entries_by_pinned",
  } as const;
  const SORT_INDEX: Record<SessionSortKey, string> = {
    updated: "session_entries_updated",
    activity: "session_entries_by_activity",
    status: FILTERS.status,
    label: FILTERS.label,
    channel: FILTERS.channel,
    model: FILTERS.model,
    parent: FILTERS.parentSessionKey,
  };
  const params = {
    since: 0,
    prefix: "",
    upper: null,
    conversation: null,
    limit: 10,
    afterValue: "x",
    afterAt: 9,
    afterKey: "k",
    status: "done",
    label: "l",
    channel: "c",
    model: "m",
    parentSessionKey: "p",
    archived: 0,
    pinned: 1,
  };

  function plan(db: ReturnType<typeof openSessions>["db"], sql: string): string {
    const used = Object.fromEntries(
      Object.entries(params).filter(([name]) => sql.includes(`@${name}`)),
    );
    return db
      .prepare<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(used)
      .map((r) => r.detail)
      .join("\n");
  }

  it("walks the filter's index in list order for each filter", () => {
    const { db } = openSessions();
    for (const [name, index] of Object.entries(FILTERS)) {
      for (const after of [false, true]) {
        const detail = plan(db, filteredListSql([name as keyof typeof FILTERS], "updated", after));
        expect(detail, name).toMatch(
          new RegExp(
            `USING INDEX ${index} \\(${name === "parentSessionKey" ? "parent_session_key" : name}=\\?`,
          ),
        );
        expect(detail, name).not.toMatch(/TEMP B-TREE/);
      }
    }
    db.close();
  });

  it("walks the sort key's index for each sort, alone, with its own filter or another", () => {
    const { db } = openSessions();
    for (const sort of SESSION_SORT_KEYS) {
      // By `updated`, the most selective filter's index (channel before status) serves the order.
      const shapes = [
        [[], SORT_INDEX[sort]],
        [["archived"], sort === "updated" ? FILTERS.archived : SORT_INDEX[sort]],
        [["status", "channel"], sort === "updated" ? FILTERS.channel : SORT_INDEX[sort]],
      ] as const;
      for (const [filters, index] of shapes) {
        for (const after of [false, true]) {
          const detail = plan(db, filteredListSql([...filters], sort, after));
          const what = `${sort} ${filters.join(",")} ${after}`;
          expect(detail, what).toMatch(new RegExp(`USING INDEX ${index}\\b`));
          expect(detail, what).not.toMatch(/TEMP B-TREE/);
        }
      }
    }
    db.close();
  });
});
