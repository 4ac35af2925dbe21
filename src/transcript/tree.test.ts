import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { TranscriptTree, type TreeInput } from "./tree.js";

const header: TreeInput = { type: "session", id: "sess-1" };
const node = (id: string, parentId?: string | null, type = "message"): TreeInput =>
  parentId === undefined ? { type, id } : { type, id, parentId };

describe("TranscriptTree", () => {
  // Shape of a real file: model_change root, a tool call answered after a second assistant
  // message (two children), an injected reply without parentId, and a trimmed-away parent.
  const events = [
    header,
    node("m0", null, "model_change"),
    node("u1", "m0"),
    node("a1", "u1"),
    node("a2", "a1"),
    node("t1", "a1"),
    node("inj"),
    node("late", "gone"),
    node("u2", "t1"),
  ];
  const tree = TranscriptTree.from(events);

  it("leaves the session header out", () => {
    expect(tree.get("sess-1")).toBeUndefined();
    expect(tree.size).toBe(8);
    expect(tree.ids()[0]).toBe("m0");
  });

  it("treats null, absent and dangling parents as roots", () => {
    expect(tree.roots()).toEqual(["m0", "inj", "late"]);
    expect(tree.danglingParents()).toEqual([{ id: "late", parentId: "gone" }]);
    expect(tree.get("inj")).toEqual({ id: "inj", type: "message", parentId: null, index: 5 });
  });

  it("keeps children in append order and finds branch points and leaves", () => {
    expect(tree.children("a1")).toEqual(["a2", "t1"]);
    expect(tree.children("nope")).toEqual([]);
    expect(tree.branchPoints()).toEqual(["a1"]);
    expect(tree.leaves()).toEqual(["a2", "inj", "late", "u2"]);
  });

  it("takes the last appended entry as the leaf and walks its path from the root", () => {
    expect(tree.leafId).toBe("u2");
    expect(tree.pathTo("u2")).toEqual(["m0", "u1", "a1", "t1", "u2"]);
    expect(tree.pathTo("a2")).toEqual(["m0", "u1", "a1", "a2"]);
    expect(tree.pathTo("late")).toEqual(["late"]);
    expect(tree.pathTo("nope")).toEqual([]);
  });

  it("returns copies, so callers cannot change the tree", () => {
    tree.children("a1").push("x");
    expect(tree.children("a1")).toEqual(["a2", "t1"]);
  });

  it("has no leaf when there are no entries", () => {
    const empty = TranscriptTree.from([header]);
    expect(empty.leafId).toBeUndefined();
    expect(empty.roots()).toEqual([]);
  });

  it("stops at a cycle instead of looping", () => {
    const cyclic = TranscriptTree.from([node("a", "c"), node("b", "a"), node("c", "b")]);
    expect(cyclic.pathTo("c")).toEqual(["a", "b", "c"]);
    expect(cyclic.roots()).toEqual([]);
    expect(TranscriptTree.from([node("s", "s")]).pathTo("s")).toEqual(["s"]);
  });

  it("refuses duplicate ids", () => {
    try {
      TranscriptTree.from([node("a", null), node("a", null)]);
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_CORRUPT_SOURCE")).toBe(true);
      expect(String(error)).toContain('"a"');
    }
  });
});

type Op = { kind: "append" } | { kind: "branch"; pick: number } | { kind: "root"; absent: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: "append" as const }) },
  { weight: 3, arbitrary: fc.nat().map((pick) => ({ kind: "branch" as const, pick })) },
  { weight: 1, arbitrary: fc.boolean().map((absent) => ({ kind: "root" as const, absent })) },
);

/** Replays operations the way the runtime writes: append to the leaf, or branch off any entry. */
function replay(ops: readonly Op[]): TreeInput[] {
  const events: TreeInput[] = [header, node("e0", null)];
  for (const [i, op] of ops.entries()) {
    const id = `e${i + 1}`;
    const last = events.at(-1)?.id ?? "e0";
    if (op.kind === "append") events.push(node(id, last));
    else if (op.kind === "root") events.push(op.absent ? node(id) : node(id, null));
    else events.push(node(id, events[1 + (op.pick % (events.length - 1))]?.id ?? "e0"));
  }
  return events;
}

describe("TranscriptTree properties", () => {
  const opsArb = fc.array(opArb, { maxLength: 60 });

  it("resolves every parent and puts every entry under exactly one root", () => {
    fc.assert(
      fc.property(opsArb, (ops) => {
        const tree = TranscriptTree.from(replay(ops));
        expect(tree.danglingParents()).toEqual([]);
        const seen: string[] = [];
        const visit = (id: string): void => {
          seen.push(id);
          for (const child of tree.children(id)) visit(child);
        };
        for (const root of tree.roots()) visit(root);
        expect([...seen].sort()).toEqual(tree.ids().sort());
      }),
    );
  });

  it("walks from a root to the leaf through parent links", () => {
    fc.assert(
      fc.property(opsArb, (ops) => {
        const tree = TranscriptTree.from(replay(ops));
        const leaf = tree.leafId ?? "";
        expect(leaf).toBe(`e${ops.length}`);
        const path = tree.pathTo(leaf);
        expect(tree.roots()).toContain(path[0]);
        expect(path.at(-1)).toBe(leaf);
        for (let i = 1; i < path.length; i++) {
          expect(tree.get(path[i] ?? "")?.parentId).toBe(path[i - 1]);
        }
        expect(tree.leaves()).toContain(leaf);
      }),
    );
  });

  it("is deterministic", () => {
    fc.assert(
      fc.property(opsArb, (ops) => {
        const [a, b] = [TranscriptTree.from(replay(ops)), TranscriptTree.from(replay(ops))];
        const view = (t: TranscriptTree) => ({
          ids: t.ids(),
          roots: t.roots(),
          leaves: t.leaves(),
          branches: t.branchPoints(),
          leaf: t.leafId,
          paths: t.ids().map((id) => t.pathTo(id)),
          children: t.ids().map((id) => t.children(id)),
        });
        expect(view(a)).toEqual(view(b));
      }),
    );
  });
});
