import { StateError } from "../db/errors.js";
import { parentIdOf, type TranscriptEvent } from "./event.js";

export type TreeInput = Pick<TranscriptEvent, "id" | "parentId" | "type">;

export interface TreeNode {
  readonly id: string;
  readonly type: string;
  /** The parent id as written (absent is null); may name an id that is not in the tree. */
  readonly parentId: string | null;
  /** Position among tree nodes in append order (the header is not counted). */
  readonly index: number;
}

/**
 * The shape of a transcript: entries form a tree (siblings share a parent, file order is not the
 * conversation path). Roots are entries whose parent is null, absent or missing from the input,
 * because real files have all three. The `session` header is not part of the tree.
 */
export class TranscriptTree {
  readonly #nodes = new Map<string, TreeNode>();
  readonly #children = new Map<string, string[]>();
  readonly #order: string[] = [];

  private constructor() {}

  /** Builds the tree in input order; throws `E_CORRUPT_SOURCE` when two entries share an id. */
  static from(events: readonly TreeInput[]): TranscriptTree {
    const tree = new TranscriptTree();
    for (const event of events) {
      if (event.type !== "session") tree.#add(event);
    }
    for (const id of tree.#order) {
      const parentId = tree.#nodes.get(id)?.parentId;
      if (parentId != null && tree.#nodes.has(parentId)) tree.#childList(parentId).push(id);
    }
    return tree;
  }

  #add(event: TreeInput): void {
    if (this.#nodes.has(event.id)) {
      throw new StateError("E_CORRUPT_SOURCE", `transcript has two entries with id "${event.id}"`, {
        details: { id: event.id },
      });
    }
    const index = this.#order.length;
    const node = { id: event.id, type: event.type, parentId: parentIdOf(event), index };
    this.#nodes.set(event.id, Object.freeze(node));
    this.#order.push(event.id);
  }

  #childList(id: string): string[] {
    let list = this.#children.get(id);
    if (list === undefined) {
      list = [];
      this.#children.set(id, list);
    }
    return list;
  }

  get size(): number {
    return this.#order.length;
  }

  /** The current leaf: the last appended entry, which is how the legacy runtime resumes. */
  get leafId(): string | undefined {
    return this.#order.at(-1);
  }

  get(id: string): TreeNode | undefined {
    return this.#nodes.get(id);
  }

  has(id: string): boolean {
    return this.#nodes.has(id);
  }

  /** All entry ids in append order. */
  ids(): string[] {
    return [...this.#order];
  }

  /** Child ids in append order; [] for a leaf or an unknown id. */
  children(id: string): string[] {
    return [...(this.#children.get(id) ?? [])];
  }

  roots(): string[] {
    return this.#order.filter((id) => !this.#hasResolvedParent(id));
  }

  leaves(): string[] {
    return this.#order.filter((id) => !this.#children.has(id));
  }

  branchPoints(): string[] {
    return this.#order.filter((id) => (this.#children.get(id)?.length ?? 0) >= 2);
  }

  /** Entries whose parent id names nothing in the tree (trimmed or header-less files). */
  danglingParents(): Array<{ id: string; parentId: string }> {
    const out: Array<{ id: string; parentId: string }> = [];
    for (const id of this.#order) {
      const parentId = this.#nodes.get(id)?.parentId;
      if (parentId != null && !this.#nodes.has(parentId)) out.push({ id, parentId });
    }
    return out;
  }

  /**
   * Ids from the root down to `id`, following parent links; [] for an unknown id. Stops at a
   * dangling parent, and at a repeated id, because a hand-edited file can contain a cycle.
   */
  pathTo(id: string): string[] {
    const path: string[] = [];
    const seen = new Set<string>();
    let current = this.#nodes.get(id);
    while (current !== undefined && !seen.has(current.id)) {
      seen.add(current.id);
      path.push(current.id);
      current = current.parentId === null ? undefined : this.#nodes.get(current.parentId);
    }
    return path.reverse();
  }

  #hasResolvedParent(id: string): boolean {
    const parentId = this.#nodes.get(id)?.parentId;
    return parentId != null && this.#nodes.has(parentId);
  }
}
