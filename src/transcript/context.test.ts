import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { buildContext, type ContextEntry } from "./context.js";
import type { TranscriptEvent } from "./event.js";

const ts = "2026-01-31T07:26:10.958Z";
const header: TranscriptEvent = { type: "session", version: 3, id: "s", timestamp: ts, cwd: "/w" };
const msg = (id: string, parentId: string | null, role = "user"): TranscriptEvent => ({
  type: "message",
  id,
  parentId,
  timestamp: ts,
  message: { role, content: [{ type: "text", text: id }] },
});
const other = (type: string, id: string, parentId: string | null, extra = {}): TranscriptEvent => ({
  type,
  id,
  parentId,
  timestamp: ts,
  ...extra,
});
const compaction = (id: string, parentId: string, firstKeptEntryId?: string) =>
  other("compaction", id, parentId, { summary: `sum ${id}`, firstKeptEntryId, tokensBefore: 1 });

const view = (entries: ContextEntry[]) => entries.map((e) => `${e.kind}:${e.role}:${e.event.id}`);

describe("buildContext without compaction", () => {
  const events = [
    header,
    other("model_change", "mc", null, { provider: "p", modelId: "m" }),
    other("thinking_level_change", "tl", "mc", { thinkingLevel: "low" }),
    msg("u1", "tl"),
    msg("a1", "u1", "assistant"),
    msg("x1", "a1", "assistant"),
    msg("t1", "a1", "toolResult"),
    other("custom", "c1", "t1", { customType: "model-snapshot", data: {} }),
    other("custom_message", "cm", "c1", { customType: "y", content: "yield", display: true }),
    other("branch_summary", "bs", "cm", { summary: "left branch" }),
    other("label", "lb", "bs"),
    msg("u2", "lb"),
  ];

  it("returns the messages on the active branch only, in path order", () => {
    expect(view(buildContext(events))).toEqual([
      "message:user:u1",
      "message:assistant:a1",
      "message:toolResult:t1",
      "message:custom:cm",
      "summary:branchSummary:bs",
      "message:user:u2",
    ]);
  });

  it("builds another branch when asked for its leaf", () => {
    expect(view(buildContext(events, { leafId: "x1" }))).toEqual([
      "message:user:u1",
      "message:assistant:a1",
      "message:assistant:x1",
    ]);
  });

  it("returns the stored event objects themselves", () => {
    expect(buildContext(events)[0]?.event).toBe(events[3]);
  });

  it("skips a message record without a role", () => {
    const broken = other("message", "b", "u1", { message: { content: "no role" } });
    expect(view(buildContext([msg("u1", null), broken]))).toEqual(["message:user:u1"]);
  });

  it("is empty for a transcript without entries", () => {
    expect(buildContext([])).toEqual([]);
    expect(buildContext([header])).toEqual([]);
  });

  it("rejects an unknown leaf and unknown options", () => {
    try {
      buildContext(events, { leafId: "nope" });
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_NOT_FOUND")).toBe(true);
    }
    expect(() => buildContext(events, { leaf: "u2" } as never)).toThrow(TypeError);
  });
});

describe("buildContext with compaction", () => {
  const chain = [header, msg("u1", null), msg("a1", "u1", "assistant"), msg("u2", "a1")];

  it("starts with the summary, then the kept entries, then what followed", () => {
    const events = [...chain, compaction("k1", "u2", "a1"), msg("a2", "k1", "assistant")];
    expect(view(buildContext(events))).toEqual([
      "summary:compactionSummary:k1",
      "message:assistant:a1",
      "message:user:u2",
      "message:assistant:a2",
    ]);
  });

  it("keeps only what follows when firstKeptEntryId is missing, later, or off the path", () => {
    for (const kept of [undefined, "zz", "a2", "side"]) {
      const events = [
        ...chain,
        msg("side", "u1"),
        compaction("k1", "u2", kept),
        msg("a2", "k1", "assistant"),
      ];
      expect(view(buildContext(events))).toEqual([
        "summary:compactionSummary:k1",
        "message:assistant:a2",
      ]);
    }
  });

  it("uses only the last compaction on the path", () => {
    const events = [
      ...chain,
      compaction("k1", "u2", "u1"),
      msg("a2", "k1", "assistant"),
      compaction("k2", "a2", "u2"),
      msg("u3", "k2"),
    ];
    expect(view(buildContext(events))).toEqual([
      "summary:compactionSummary:k2",
      "message:user:u2",
      "message:assistant:a2",
      "message:user:u3",
    ]);
    expect(view(buildContext(events, { leafId: "a2" }))[0]).toBe("summary:compactionSummary:k1");
  });
});

/** Straight transcription of the legacy runtime's loop, as an oracle for the property test. */
function reference(events: TranscriptEvent[]): string[] {
  const byId = new Map(events.filter((e) => e.type !== "session").map((e) => [e.id, e]));
  const path: TranscriptEvent[] = [];
  const seen = new Set<string>();
  for (let e = events.filter((x) => x.type !== "session").at(-1); e && !seen.has(e.id); ) {
    seen.add(e.id);
    path.unshift(e);
    e = typeof e.parentId === "string" ? byId.get(e.parentId) : undefined;
  }
  const entry = (e: TranscriptEvent): string[] => {
    if (e.type === "message") return [`message:${(e.message as { role: string }).role}:${e.id}`];
    if (e.type === "custom_message") return [`message:custom:${e.id}`];
    if (e.type === "branch_summary") return [`summary:branchSummary:${e.id}`];
    return [];
  };
  const ci = path.map((e) => e.type).lastIndexOf("compaction");
  if (ci < 0) return path.flatMap(entry);
  const out = [`summary:compactionSummary:${path[ci]?.id}`];
  let found = false;
  for (let i = 0; i < ci; i++) {
    found ||= path[i]?.id === path[ci]?.firstKeptEntryId;
    if (found) out.push(...entry(path[i] as TranscriptEvent));
  }
  for (const e of path.slice(ci + 1)) out.push(...entry(e));
  return out;
}

const TYPES = ["message", "message", "message", "compaction", "custom_message", "branch_summary"];
const eventsArb = fc
  .array(fc.tuple(fc.nat(), fc.nat(), fc.nat(), fc.boolean()), { minLength: 1, maxLength: 40 })
  .map((specs) => {
    const events: TranscriptEvent[] = [header];
    for (const [i, [parentPick, typePick, keptPick, toLeaf]] of specs.entries()) {
      const prior = events.slice(1);
      const parent = toLeaf ? prior.at(-1) : prior[parentPick % (prior.length + 1)];
      const type = TYPES[typePick % TYPES.length] ?? "message";
      const id = `e${i}`;
      const parentId = parent?.id ?? null;
      if (type === "message") events.push(msg(id, parentId, ["user", "assistant"][typePick % 2]));
      else if (type === "compaction") {
        const kept = keptPick % 4 === 0 ? undefined : `e${keptPick % (i + 2)}`;
        events.push(other(type, id, parentId, { summary: "s", firstKeptEntryId: kept }));
      } else events.push(other(type, id, parentId, { summary: "s", content: "c" }));
    }
    return events;
  });

describe("buildContext properties", () => {
  it("matches the legacy algorithm, is deterministic and does not touch its input", () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        const before = JSON.stringify(events);
        const first = buildContext(events);
        expect(view(first)).toEqual(reference(events));
        expect(buildContext(events)).toEqual(first);
        expect(JSON.stringify(events)).toBe(before);
      }),
    );
  });
});
