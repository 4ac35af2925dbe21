import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AgentState, openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { ageSession, DAY, writeConfig } from "./test-support/seed-home.js";

const tempDir = useTempDirs();
/** Each run is a real home; `AGENTSTATE_MAINTENANCE_PROPERTY_RUNS` asks for more. */
const RUNS = Number(process.env.AGENTSTATE_MAINTENANCE_PROPERTY_RUNS ?? 20);
const KEYS = ["k1", "k2", "k3"] as const;
const POLICY = { maintenance: { coldAfterDays: 30, pruneAfterDays: 90, keepRecent: 0 } };

type Key = (typeof KEYS)[number];
type Op =
  | { kind: "append"; key: Key; pick: number }
  | { kind: "branch"; key: Key; pick: number; back: number; summary: boolean }
  | { kind: "reset"; key: Key }
  | { kind: "pin"; key: Key; on: boolean }
  | { kind: "age"; key: Key; pick: number; days: 10 | 40 | 100; id?: string }
  | { kind: "maintain" }
  | { kind: "read"; key: Key; pick: number };

const keyArb = fc.constantFrom(...KEYS);
const pickArb = fc.nat(5);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("append"), key: keyArb, pick: pickArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("branch"),
      key: keyArb,
      pick: pickArb,
      back: fc.nat(4),
      summary: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("reset"), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("pin"), key: keyArb, on: fc.boolean() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("age"),
      key: keyArb,
      pick: pickArb,
      days: fc.constantFrom(10 as const, 40 as const, 100 as const, 100 as const),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ kind: "maintain" as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("read"), key: keyArb, pick: pickArb }) },
);

/** The test's own account of a session: what was appended, and what it knows of its idleness. */
interface ModelSession {
  id: string;
  key: Key;
  /** [eventId, the unique word it carries] in append order. */
  events: [string, string][];
  ended: boolean;
  /** Days since its last write by the model's account; 0 while it is fresh. */
  idleDays: number;
}

interface Model {
  sessions: ModelSession[];
  pruned: Set<string>;
  pinned: Set<Key>;
  words: number;
  tally: { cold: number; prune: number; coldReads: number };
}

/** A session of `key` in creation order, living ones only; `pick` wraps around. */
function pickSession(model: Model, key: Key, pick: number): ModelSession | undefined {
  const mine = model.sessions.filter((s) => s.key === key && !model.pruned.has(s.id));
  return mine.length === 0 ? undefined : mine[pick % mine.length];
}

function current(model: Model, key: Key): ModelSession | undefined {
  return model.sessions.findLast((s) => s.key === key && !s.ended);
}

function appendTo(agent: AgentState, model: Model, s: ModelSession): void {
  const word = `w${model.words++}z`;
  const { event } = agent.transcripts.append(s.id, {
    type: "message",
    message: { role: "user", content: [{ type: "text", text: `${word} said` }] },
  });
  s.events.push([event.id, word]);
  s.idleDays = 0;
}

function reset(agent: AgentState, model: Model, key: Key): void {
  const id = `s${model.sessions.length}`;
  const old = current(model, key);
  if (old) {
    agent.lifecycle.reset(`agent:main:${key}`, { sessionId: id });
    old.ended = true;
  } else {
    agent.lifecycle.start(`agent:main:${key}`, { sessionId: id });
  }
  // The store writes a session header (its id is the session's) before the first event.
  const s: ModelSession = { id, key, events: [[id, ""]], ended: false, idleDays: 0 };
  model.sessions.push(s);
  appendTo(agent, model, s);
}

function branch(agent: AgentState, model: Model, s: ModelSession, back: number, summary: boolean) {
  const target = s.events[Math.max(1, s.events.length - 1 - back)];
  if (target === undefined) return;
  const word = `w${model.words++}z`;
  const leaf = agent.branches.branch(s.id, target[0], summary ? { summary: word } : {});
  if (!summary) return;
  s.events.push([leaf, word]);
  s.idleDays = 0;
}

/** Reads a session four ways and compares each with the model. */
function checkReads(agent: AgentState, model: Model, s: ModelSession): void {
  const ids = s.events.map(([id]) => id);
  if (agent.transcripts.cold.isCold(s.id)) model.tally.coldReads++;
  expect(
    agent.transcripts.read(s.id).map((e) => e.event.id),
    `read ${s.id}`,
  ).toEqual(ids);
  expect(
    agent.transcripts.tail(s.id, 3).map((e) => e.event.id),
    `tail ${s.id}`,
  ).toEqual(ids.slice(-3));
  const exported = [...agent.transcripts.exportJsonl(s.id)].map(
    (line) => (JSON.parse(line) as { id: string }).id,
  );
  expect(exported, `export ${s.id}`).toEqual(ids);
  const last = s.events.findLast(([, word]) => word !== "");
  if (last === undefined) return;
  const hits = agent.search.search(last[1]).map((h) => [h.sessionId, h.eventId]);
  expect(hits, `search ${last[1]}`).toEqual([[s.id, last[0]]]);
}

function checkGone(agent: AgentState, model: Model, id: string): void {
  const s = model.sessions.find((x) => x.id === id) as ModelSession;
  expect(agent.transcripts.read(id), `pruned ${id}`).toEqual([]);
  for (const [, word] of s.events)
    if (word !== "") expect(agent.search.search(word), word).toEqual([]);
}

/** Sessions present and sessions cold, read from the rows. */
function rows(agent: AgentState) {
  const ids = (sql: string) =>
    new Set(
      agent.db
        .prepare<{ id: string }>(sql)
        .all()
        .map((r) => r.id),
    );
  return {
    present: ids("SELECT session_id AS id FROM sessions"),
    cold: ids("SELECT s.session_id AS id FROM cold_sessions c JOIN sessions s USING (session_no)"),
  };
}

function maintain(state: ReturnType<typeof openStateHome>, agent: AgentState, model: Model) {
  const before = rows(agent);
  state.maintenance.run();
  const after = rows(agent);
  for (const s of model.sessions) {
    if (model.pruned.has(s.id)) continue;
    const isProtected = model.pinned.has(s.key) || s.idleDays === 0;
    const moved = after.cold.has(s.id) && !before.cold.has(s.id);
    if (!after.present.has(s.id)) {
      expect(isProtected, `pruned protected ${s.id}`).toBe(false);
      expect(s.ended && s.idleDays >= 90, `pruned live or recent ${s.id}`).toBe(true);
      model.pruned.add(s.id);
      model.tally.prune++;
      continue;
    }
    if (moved) {
      expect(isProtected, `moved protected ${s.id}`).toBe(false);
      expect(s.idleDays, `moved recent ${s.id}`).toBeGreaterThanOrEqual(30);
      model.tally.cold++;
    }
  }
  for (const id of model.pruned) checkGone(agent, model, id);
}

function apply(state: ReturnType<typeof openStateHome>, model: Model, op: Op): void {
  const agent = state.agent("main");
  if (op.kind === "maintain") maintain(state, agent, model);
  else if (op.kind === "reset") reset(agent, model, op.key);
  else if (op.kind === "pin") {
    if (current(model, op.key) === undefined) return;
    const on = op.on;
    agent.sessions.patch(`agent:main:${op.key}`, (e) => {
      const { pinnedAt: _, ...rest } = e ?? {};
      return on ? { ...rest, pinnedAt: 1 } : rest;
    });
    if (op.on) model.pinned.add(op.key);
    else model.pinned.delete(op.key);
  } else step(agent, model, op);
}

function step(
  agent: AgentState,
  model: Model,
  op: Exclude<Op, { kind: "maintain" | "reset" | "pin" }>,
) {
  const s =
    op.kind === "age" && op.id !== undefined
      ? model.sessions.find((x) => x.id === op.id && !model.pruned.has(x.id))
      : pickSession(model, op.key, op.pick);
  if (s === undefined) return;
  if (op.kind === "append") appendTo(agent, model, s);
  else if (op.kind === "branch") branch(agent, model, s, op.back, op.summary);
  else if (op.kind === "read") checkReads(agent, model, s);
  else {
    ageSession(agent, s.id, Date.now() - op.days * DAY);
    s.idleDays = op.days;
  }
}

describe("maintenance interleaved with appends, branches, resets, pins and reads (property)", () => {
  it("loses no event, serves no stale one, and never moves or prunes a protected session", () => {
    const tally = { cold: 0, prune: 0, coldReads: 0 };
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 10, maxLength: 45 }), (ops) => {
        const dir = tempDir();
        writeConfig(dir, POLICY);
        const state = openStateHome({ home: dir });
        const model: Model = {
          sessions: [],
          pruned: new Set(),
          pinned: new Set(),
          words: 0,
          tally,
        };
        try {
          for (const key of KEYS) reset(state.agent("main"), model, key);
          for (const op of ops) apply(state, model, op);
          // Closed by a pass over a home gone quiet: every session idle past both thresholds.
          for (const s of model.sessions)
            apply(state, model, { kind: "age", key: s.key, pick: 0, days: 100, id: s.id });
          apply(state, model, { kind: "maintain" });
          const agent = state.agent("main");
          const cold = rows(agent).cold;
          // Nothing stands in the way once all is quiet: only pins keep a session where it was.
          for (const s of model.sessions) {
            if (model.pinned.has(s.key)) continue;
            if (s.ended) expect(model.pruned.has(s.id), `not pruned ${s.id}`).toBe(true);
            else expect(cold.has(s.id), `not cold ${s.id}`).toBe(true);
          }
          for (const s of model.sessions) if (!model.pruned.has(s.id)) checkReads(agent, model, s);
          expect(rows(agent).present).toEqual(
            new Set(model.sessions.filter((s) => !model.pruned.has(s.id)).map((s) => s.id)),
          );
        } finally {
          state.close();
        }
      }),
      { numRuns: RUNS },
    );
    // Worth something only if sessions were moved, pruned and read from their archives.
    if (RUNS >= 10) {
      expect(tally.cold).toBeGreaterThan(0);
      expect(tally.prune).toBeGreaterThan(0);
      expect(tally.coldReads).toBeGreaterThan(0);
    }
  }, 120_000);
});
