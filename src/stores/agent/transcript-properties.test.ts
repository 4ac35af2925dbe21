import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { buildContext } from "../../transcript/context.js";

const tempDir = useTempDirs();
const KEY = "agent:main:main";

type Op =
  | { kind: "append"; text: string }
  | { kind: "branch"; back: number }
  | { kind: "fork"; back: number }
  | { kind: "reset" }
  | { kind: "compact"; back: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      text: fc.string({ maxLength: 12 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("branch" as const), back: fc.nat(6) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("fork" as const), back: fc.nat(6) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "reset" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("compact" as const), back: fc.nat(4) }) },
);

describe("transcript invariants under random append / branch / fork / reset / compact", () => {
  it("keeps seq contiguous, every parent resolvable and the context deterministic", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => {
        const home = openStateHome({ home: tempDir() });
        const agent = home.agent("main");
        let current = agent.lifecycle.start(KEY).sessionId;
        const sessions = new Set([current]);
        const messageIds = () =>
          agent.transcripts
            .read(current)
            .filter((e) => e.event.type === "message")
            .map((e) => e.event.id);
        for (const step of ops) {
          const ids = messageIds();
          const pick = (back: number) => ids[Math.max(0, ids.length - 1 - back)];
          if (step.kind === "append") {
            agent.transcripts.append(current, {
              type: "message",
              message: { role: "user", content: step.text },
            });
          } else if (step.kind === "branch" && ids.length > 0) {
            agent.branches.branch(current, pick(step.back) as string);
          } else if (step.kind === "fork" && ids.length > 0) {
            current = agent.branches.fork(current, {
              fromEventId: pick(step.back) as string,
            }).sessionId;
            agent.sessions.patch(KEY, { sessionId: current });
          } else if (step.kind === "reset") {
            current = agent.lifecycle.reset(KEY).sessionId;
          } else if (step.kind === "compact" && agent.lifecycle.active(KEY)) {
            const path = agent.branches.leaf(current)
              ? agent.branches.tree(current).pathTo(agent.branches.leaf(current) as string)
              : [];
            const kept = path[Math.max(0, path.length - 1 - step.back)];
            current = agent.lifecycle.compact(KEY, {
              summary: "s",
              ...(kept ? { firstKeptEntryId: kept } : {}),
            }).session.sessionId;
          }
          sessions.add(current);
        }
        for (const sessionId of sessions) {
          const events = agent.transcripts.read(sessionId, { limit: 10_000 });
          expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
          expect(events[0]?.event.type).toBe("session");
          const ids = new Set(events.map((e) => e.event.id));
          for (const { event } of events.slice(1)) {
            if (typeof event.parentId === "string") expect(ids.has(event.parentId)).toBe(true);
          }
          const leaf = agent.branches.leaf(sessionId);
          const once = agent.branches.context(sessionId);
          expect(agent.branches.context(sessionId)).toEqual(once);
          expect(
            buildContext(
              events.map((e) => e.event),
              leaf ? { leafId: leaf } : {},
            ),
          ).toEqual(once);
        }
        expect(agent.db.integrityCheck()).toEqual(["ok"]);
        home.close();
      }),
      { numRuns: 60 },
    );
  });
});
