import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { contributionOf, type OracleRow, sumByDay } from "../../test-support/usage-oracle.js";
import type { NewTranscriptEvent } from "./transcript-store.js";

const tempDir = useTempDirs();
const DAY = 86_400_000;
const SESSIONS = ["s1", "s2", "s3"];

interface Appended {
  event: NewTranscriptEvent;
  time: number;
}

/** `other`: done by a second writer's connection, which keeps its own unfolded events. */
type Op =
  | { kind: "append"; session: number; event: Appended; other: boolean }
  | { kind: "appendMany"; session: number; events: Appended[] }
  | { kind: "rolledBack"; session: number; events: Appended[] }
  | { kind: "delete"; session: number; other: boolean }
  | { kind: "flush" };

const tokenValue = fc.oneof(
  fc.integer({ min: 0, max: 50_000 }),
  fc.constantFrom(-5, 1.5, 1e12, 1e300, "12", null),
);

// Full, partial (injected messages: no cache fields, no cost), missing, and malformed usage.
const usage = fc.oneof(
  fc.record(
    {
      input: tokenValue,
      output: tokenValue,
      cacheRead: tokenValue,
      cacheWrite: tokenValue,
      cost: fc.oneof(
        fc.record({ total: fc.integer({ min: 0, max: 10_000 }).map((n) => n / 1000) }),
        fc.constantFrom({ total: "0.5" }, { total: -1 }, {}, 3),
      ),
    },
    { requiredKeys: [] },
  ),
  fc.constantFrom(undefined, "n/a", [1, 2]),
);

const message = fc.record(
  {
    role: fc.constantFrom("assistant", "assistant", "user", "toolResult"),
    provider: fc.constantFrom("anthropic", "openai", 7),
    model: fc.constantFrom("claude-x", "gpt-y", "m-ü", null),
    usage,
    content: fc.constant([{ type: "text", text: "hi" }]),
  },
  { requiredKeys: ["role"] },
);

// Days around now, one before 1970 (a negative time floors into its own day).
const time = fc.oneof(
  fc.integer({ min: 0, max: 4 * DAY }).map((t) => Date.UTC(2026, 2, 1) + t),
  fc.integer({ min: -2 * DAY, max: -1 }),
);

const appended: fc.Arbitrary<Appended> = fc
  .tuple(fc.oneof(message, fc.constant(undefined)), time, fc.constantFrom("message", "custom"))
  .map(([m, t, type]) => ({
    event: {
      type,
      timestamp: new Date(t).toISOString(),
      ...(m === undefined ? {} : { message: m }),
    },
    time: t,
  }));

const session = fc.nat(SESSIONS.length - 1);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      session,
      event: appended,
      other: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("appendMany" as const),
      session,
      events: fc.array(appended, { minLength: 1, maxLength: 90 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("rolledBack" as const),
      session,
      events: fc.array(appended, { minLength: 1, maxLength: 90 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("delete" as const), session, other: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "flush" as const }) },
);

const OPTIONS = { ensureHeader: false } as const;

/** Applies `step` to the store and to the model (events by session). */
function apply(homes: [StateHome, StateHome], model: Map<string, Appended[]>, step: Op): void {
  const agent = homes["other" in step && step.other ? 1 : 0].agent("main");
  if (step.kind === "flush") {
    agent.transcripts.index.indexPending();
    return;
  }
  const sessionId = SESSIONS[step.session] as string;
  const kept = model.get(sessionId) ?? [];
  if (step.kind === "append") {
    agent.transcripts.append(sessionId, step.event.event, OPTIONS);
    model.set(sessionId, [...kept, step.event]);
  } else if (step.kind === "appendMany") {
    agent.transcripts.appendMany(
      sessionId,
      step.events.map((e) => e.event),
      OPTIONS,
    );
    model.set(sessionId, [...kept, ...step.events]);
  } else if (step.kind === "rolledBack") {
    expect(() =>
      agent.db.tx(() => {
        agent.transcripts.appendMany(
          sessionId,
          step.events.map((e) => e.event),
          OPTIONS,
        );
        throw new Error("undone");
      }),
    ).toThrow("undone");
  } else {
    agent.lifecycle.delete(sessionId);
    model.delete(sessionId);
  }
}

function expected(model: Map<string, Appended[]>): OracleRow[] {
  return sumByDay([...model.values()].flat().map((a) => contributionOf(a.event, a.time)));
}

describe("daily usage rollups", () => {
  it("equal sums over the events after random appends, deletes and rollbacks, read-only readers too", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 25 }), (ops) => {
        const path = tempDir();
        const home = openStateHome({ home: path });
        home.agent("main");
        const other = openStateHome({ home: path });
        const reader = openStateHome({ home: path, readonly: true });
        const model = new Map<string, Appended[]>();
        try {
          for (const step of ops) {
            apply([home, other], model, step);
            const want = expected(model);
            expect(sumByDay(home.agent("main").usage.byDay())).toEqual(want);
            expect(sumByDay(reader.agent("main").usage.byDay())).toEqual(want);
          }
          // Once everything is folded, the rollup rows alone hold the answer.
          const agent = home.agent("main");
          agent.transcripts.index.indexPending();
          const rows = agent.db
            .prepare<{ n: number }>(
              `SELECT count(*) AS n FROM transcript_events
               WHERE id > (SELECT rolled_through FROM usage_rollup_state)`,
            )
            .get();
          expect(rows?.n).toBe(0);
          expect(sumByDay(agent.usage.byDay())).toEqual(expected(model));
        } finally {
          reader.close();
          other.close();
          home.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it("counts whole batches in the transaction that appends them, with events waiting before or not", () => {
    const home = openStateHome({ home: tempDir() });
    const agent = home.agent("main");
    const all: Appended[] = [];
    const batch = (size: number, from: number): Appended[] =>
      Array.from({ length: size }, (_, i) => {
        const time = Date.UTC(2026, 2, 1) + ((from + i) % 3) * DAY;
        const usage = { input: from + i, output: 1, cost: { total: (from + i) / 1000 } };
        const message = { role: "assistant", model: `m${(from + i) % 2}`, usage };
        return {
          event: { type: "message", timestamp: new Date(time).toISOString(), message },
          time,
        };
      });
    for (const [b, size] of [100, 64, 300].entries()) {
      if (b === 2) {
        const one = batch(1, 7_000)[0] as Appended;
        agent.transcripts.append("s1", one.event, OPTIONS);
        all.push(one);
      }
      const events = batch(size, all.length);
      agent.transcripts.appendMany(
        SESSIONS[b] as string,
        events.map((e) => e.event),
        OPTIONS,
      );
      all.push(...events);
      // Folded in the append's own transaction: no event is left above the mark.
      const left = agent.db
        .prepare<{ n: number }>(
          `SELECT count(*) AS n FROM transcript_events
           WHERE id > (SELECT rolled_through FROM usage_rollup_state)`,
        )
        .get();
      expect(left?.n, `batch ${b}`).toBe(0);
      expect(sumByDay(agent.usage.byDay())).toEqual(
        sumByDay(all.map((a) => contributionOf(a.event, a.time))),
      );
    }
    home.close();
  });

  it("counts another writer's events that took the ids of this writer's deleted, unfolded ones", () => {
    const path = tempDir();
    const [a, b] = [openStateHome({ home: path }), openStateHome({ home: path })];
    const event = (model: string, input: number): Appended => {
      const time = Date.UTC(2026, 2, 1);
      const message = { role: "assistant", model, usage: { input } };
      return { event: { type: "message", timestamp: new Date(time).toISOString(), message }, time };
    };
    const mine = [event("mine", 1), event("mine", 2)];
    const theirs = [event("theirs", 30), event("theirs", 40)];
    a.agent("main").transcripts.appendMany(
      "s1",
      mine.map((e) => e.event),
      OPTIONS,
    );
    b.agent("main").lifecycle.delete("s1");
    b.agent("main").transcripts.appendMany(
      "s2",
      theirs.map((e) => e.event),
      OPTIONS,
    );
    a.agent("main").transcripts.index.indexPending();
    const want = sumByDay(theirs.map((e) => contributionOf(e.event, e.time)));
    expect(sumByDay(a.agent("main").usage.byDay())).toEqual(want);
    a.close();
    b.close();
  });

  it("reads only the days asked for, in UTC", () => {
    const home = openStateHome({ home: tempDir() });
    const agent = home.agent("main");
    const day = Date.UTC(2026, 4, 10);
    const at = (t: number) => ({ type: "custom", timestamp: new Date(t).toISOString() });
    agent.transcripts.appendMany("s", [at(day - 1), at(day), at(day + DAY - 1), at(day + DAY)], {
      ensureHeader: false,
    });
    const days = (since: number, until: number) =>
      agent.usage.byDay({ since, until }).map((r) => [r.dayStartAt, r.events]);
    expect(days(day + 5, day + 6)).toEqual([[day, 2]]);
    expect(days(day - 1, day)).toEqual([
      [day - DAY, 1],
      [day, 2],
    ]);
    expect(() => agent.usage.byDay({ since: 1.5 })).toThrow(/since must be Unix milliseconds/);
    home.close();
  });
});
