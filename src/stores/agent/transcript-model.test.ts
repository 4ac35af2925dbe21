import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AgentState, openStateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import {
  type AppendExpectation,
  type ModelEvent,
  TranscriptModel,
} from "../../test-support/transcript-model.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import type { AppendResult } from "./transcript-store.js";

/** CJK words sit inside longer runs (`支持` in `我们支持東京`) and are searched for like the others. */
const SEARCH_CJK = true;

const RUNS = Number(process.env.TRANSCRIPT_MODEL_RUNS ?? 30);
const SESSIONS = ["s-a", "s-b", "s-c"];
// No word is a part of another, so a tokenizer that matches inside words cannot over-match.
const LATIN = ["basil", "tomato", "river", "garden", "lantern", "orbit"];
const ACCENTED = ["café", "crème", "naïve", "façade", "jalapeño", "über"];
const CJK = ["支持", "東京", "天气", "数据库", "検索"];
const SEARCHED = [...LATIN, ...ACCENTED, ...(SEARCH_CJK ? CJK : [])];
const FULL_CHECK_EVERY = 25;

type Op =
  | { kind: "skip" }
  | { kind: "append"; s: number; text: string; blocks: boolean; key: number | null; other: boolean }
  | {
      kind: "appendMany";
      s: number;
      items: Array<{ text: string; key: number | null }>;
      other: boolean;
    }
  | { kind: "branch"; s: number; target: number; summary: string | null }
  | { kind: "label"; s: number; target: number }
  | { kind: "delete"; s: number; other: boolean }
  | { kind: "search"; word: string; s: number | null };

const cased = (words: readonly string[]) =>
  fc
    .tuple(fc.constantFrom(...words), fc.constantFrom("lower", "upper", "title"))
    .map(([word, form]) =>
      form === "upper"
        ? word.toUpperCase()
        : form === "title"
          ? word.charAt(0).toUpperCase() + word.slice(1)
          : word,
    );
// CJK is written without spaces, so a CJK word sits inside a longer run of characters.
const cjkRun = fc
  .array(fc.constantFrom(...CJK), { minLength: 1, maxLength: 3 })
  .map((w) => w.join(""));
const piece = fc.oneof(
  { weight: 3, arbitrary: cased([...LATIN, ...ACCENTED]) },
  { weight: 1, arbitrary: cjkRun },
);
const text = fc
  .tuple(fc.array(piece, { minLength: 1, maxLength: 5 }), fc.constantFrom(" ", ", ", "\n", " — "))
  .map(([pieces, separator]) => pieces.join(separator));
const key = fc.option(fc.nat(4), { nil: null, freq: 2 });
const session = fc.nat(2);
/** Done by a second writer, a home of its own on the same files, one time in four. */
const other = fc.nat(3).map((n) => n === 0);

// First, so that shrinking replaces ops it does not need with a no-op.
const op: fc.Arbitrary<Op> = fc.oneof(
  { withCrossShrink: true },
  { weight: 1, arbitrary: fc.constant({ kind: "skip" as const }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      s: session,
      text,
      blocks: fc.boolean(),
      key,
      other,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("appendMany" as const),
      s: session,
      items: fc.array(fc.record({ text, key }), { minLength: 1, maxLength: 4 }),
      other,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("branch" as const),
      s: session,
      target: fc.nat(),
      summary: fc.option(text, { nil: null, freq: 2 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("label" as const), s: session, target: fc.nat() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("delete" as const), s: session, other }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("search" as const),
      word: cased(SEARCHED),
      s: fc.option(session, { nil: null }),
    }),
  },
);

const message = (content: string, blocks: boolean, idempotencyKey?: string) => ({
  type: "message",
  message: {
    role: "user",
    content: blocks ? [{ type: "text", text: content }] : content,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  },
});

/** The text of a stored event, read the way a person would: message text or summary. */
function textOf(event: TranscriptEvent): string {
  if (event.type === "branch_summary") return String(event.summary);
  if (event.type !== "message") return "";
  const content = (event.message as { content: unknown }).content;
  if (typeof content === "string") return content;
  return (content as Array<{ text: string }>).map((block) => block.text).join("\n");
}

function checkAppend(result: AppendResult, expected: AppendExpectation): void {
  expect(result.deduplicated).toBe(expected.deduplicated);
  expect(result.seq).toBe(expected.seq);
  if (expected.deduplicated) expect(result.event.id).toBe(expected.id);
  else expect(result.event.parentId).toBe(expected.parentId);
}

/** Checks one append's result against the model, then records what it stored. */
function commitResult(
  model: TranscriptModel,
  sessionId: string,
  result: AppendResult,
  fields: Pick<ModelEvent, "type" | "text" | "key">,
): void {
  const expected = model.expectAppend(sessionId, fields.key);
  checkAppend(result, expected);
  if (!expected.deduplicated) {
    model.commit(sessionId, { id: result.event.id, ...fields }, expected.parentId);
  }
}

/** Every invariant of one session, through the public API of one connection. */
function checkSession(agent: AgentState, model: TranscriptModel, sessionId: string): void {
  const session = model.sessions.get(sessionId);
  const stored = agent.transcripts.read(sessionId, { limit: 10_000 });
  if (session === undefined) {
    expect(stored).toEqual([]);
    return;
  }
  expect(stored.map((e) => e.seq)).toEqual(session.events.map((_, i) => i + 1));
  expect(
    stored.map(({ event }) => ({
      id: event.id,
      parentId: Object.hasOwn(event, "parentId") ? event.parentId : undefined,
      type: event.type,
      text: textOf(event),
    })),
  ).toEqual(session.events.map(({ id, parentId, type, text }) => ({ id, parentId, type, text })));
  const ids = new Set(stored.map((e) => e.event.id));
  for (const { event } of stored) {
    if (typeof event.parentId === "string") expect(ids.has(event.parentId)).toBe(true);
  }
  expect(agent.branches.leaf(sessionId)).toBe(session.leaf);
  expect(agent.branches.context(sessionId).map((e) => ({ id: e.event.id, kind: e.kind }))).toEqual(
    model.contextIds(sessionId),
  );
  const n = 1 + (stored.length % 4);
  expect(agent.transcripts.tail(sessionId, n).map((e) => e.event.id)).toEqual(
    session.events.slice(-n).map((e) => e.id),
  );
  const middle = Math.floor(stored.length / 2);
  expect(agent.transcripts.get(sessionId, session.events[middle]?.id as string)?.seq).toBe(
    middle + 1,
  );
}

function checkAll(agent: AgentState, model: TranscriptModel, sessionIds: string[]): void {
  for (const sessionId of sessionIds) checkSession(agent, model, sessionId);
  const scopes = agent.transcripts.listScopes().map((s) => [s.sessionId, s.eventCount]);
  const expected = [...model.sessions].map(([id, s]) => [id, s.events.length]);
  expect(scopes.sort()).toEqual(expected.sort());
}

function checkSearch(
  agent: AgentState,
  model: TranscriptModel,
  word: string,
  sessionId?: string,
): void {
  const expected = model.matches(word, sessionId);
  const limit = Math.min(500, expected.size + 3);
  const hits = agent.search.search(word, {
    limit,
    ...(sessionId === undefined ? {} : { sessionId }),
  });
  const found = hits.map((hit) => `${hit.sessionId}/${hit.eventId}`);
  expect(new Set(found).size, "no hit twice").toBe(found.length);
  if (expected.size < limit) expect(found.sort()).toEqual([...expected.keys()].sort());
  else expect(found).toHaveLength(limit);
  for (const hit of hits) {
    const event = expected.get(`${hit.sessionId}/${hit.eventId}`);
    expect(event, `hit ${hit.sessionId}/${hit.eventId} for "${word}"`).toBeDefined();
    expect([hit.seq, hit.eventType]).toEqual([event?.seq, event?.type]);
  }
}

/** 50 to 200 ops; a counterexample prints without the no-ops shrinking left in. */
const ops = fc.array(op, { minLength: 50, maxLength: 200 }).map((list) =>
  Object.assign(list, {
    [fc.toStringMethod]: () => fc.stringify(list.filter((step) => step.kind !== "skip")),
  }),
);

interface Run {
  writer: AgentState;
  /** Another writer on the same database: its commits may delete and reuse the ids of events the first one holds the text of. */
  other: AgentState;
  reader: AgentState;
  model: TranscriptModel;
  sessionIds: string[];
}

/** Applies one op to the writer and the model; returns the session it changed, if any. */
function apply(run: Run, step: Op, index: number): string | undefined {
  const { model, sessionIds } = run;
  if (step.kind === "skip") return undefined;
  if (step.kind === "search") {
    const sessionId = step.s === null ? undefined : sessionIds[step.s % sessionIds.length];
    // Rotate which connection asks first: none may depend on another's query.
    const all = [run.writer, run.reader, run.other];
    const order = [...all.slice(index % 3), ...all.slice(0, index % 3)];
    for (const agent of order) checkSearch(agent, model, step.word, sessionId);
    return undefined;
  }
  const writer = "other" in step && step.other ? run.other : run.writer;
  const sessionId = sessionIds[step.s % sessionIds.length] as string;
  if (step.kind === "append") {
    const k = step.key === null ? null : `k${step.key}`;
    const result = writer.transcripts.append(
      sessionId,
      message(step.text, step.blocks),
      k === null ? {} : { idempotencyKey: k },
    );
    commitResult(model, sessionId, result, { type: "message", text: step.text, key: k });
  } else if (step.kind === "appendMany") {
    const keys = step.items.map((item) => (item.key === null ? null : `k${item.key}`));
    const results = writer.transcripts.appendMany(
      sessionId,
      step.items.map((item, i) => message(item.text, i % 2 === 0, keys[i] ?? undefined)),
    );
    expect(results).toHaveLength(step.items.length);
    results.forEach((result, i) => {
      const item = step.items[i] as { text: string };
      commitResult(model, sessionId, result, {
        type: "message",
        text: item.text,
        key: keys[i] ?? null,
      });
    });
  } else if (step.kind === "delete") {
    expect(writer.lifecycle.delete(sessionId)).toBe(model.sessions.has(sessionId));
    model.delete(sessionId);
  } else {
    applyTreeOp(run, step, sessionId);
  }
  return sessionId;
}

function applyTreeOp(
  run: Run,
  step: Extract<Op, { kind: "branch" | "label" }>,
  sessionId: string,
): void {
  const { writer, model } = run;
  const targets = model.targets(sessionId);
  const target = targets[step.target % Math.max(1, targets.length)];
  if (target === undefined) return;
  if (step.kind === "label") {
    const result = writer.branches.label(sessionId, target.id, `mark-${step.target % 10}`);
    commitResult(model, sessionId, result, { type: "label", text: "", key: null });
  } else if (step.summary === null) {
    expect(writer.branches.branch(sessionId, target.id)).toBe(target.id);
    model.moveLeaf(sessionId, target.id);
  } else {
    const id = writer.branches.branch(sessionId, target.id, { summary: step.summary });
    model.commit(
      sessionId,
      { id, type: "branch_summary", text: step.summary, key: null },
      target.id,
    );
  }
}

const tempDir = useTempDirs();

function runOps(sessionCount: number, ops: Op[]): void {
  const home = tempDir();
  const writerHome = openStateHome({ home });
  const writer = writerHome.agent("main");
  const otherHome = openStateHome({ home });
  const readerHome = openStateHome({ home, readonly: true });
  const run: Run = {
    writer,
    other: otherHome.agent("main"),
    reader: readerHome.agent("main"),
    model: new TranscriptModel(),
    sessionIds: SESSIONS.slice(0, sessionCount),
  };
  try {
    ops.forEach((step, index) => {
      const touched = apply(run, step, index);
      if (touched !== undefined) checkSession(writer, run.model, touched);
      if (index % FULL_CHECK_EVERY === FULL_CHECK_EVERY - 1) {
        checkAll(run.reader, run.model, run.sessionIds);
      }
    });
    checkAll(writer, run.model, run.sessionIds);
    checkAll(run.other, run.model, run.sessionIds);
    checkAll(run.reader, run.model, run.sessionIds);
    for (const word of SEARCHED) checkSearch(run.reader, run.model, word);
  } finally {
    readerHome.close();
    otherHome.close();
    writerHome.close();
  }
}

describe("transcripts and search against an in-memory model", () => {
  it(
    "agree after every op of random append / appendMany / branch / label / delete / search, two writers and a reader",
    () => {
      fc.assert(fc.property(fc.integer({ min: 1, max: 3 }), ops, runOps), { numRuns: RUNS });
      // A run takes 0.1 to 0.2 s on a loaded machine; long soak runs must not hit the default cap.
    },
    Math.max(60_000, RUNS * 1_000),
  );
});
