import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { isMessageEvent, type TranscriptEvent } from "./event.js";
import { TranscriptTree } from "./tree.js";

export interface ContextEntry {
  kind: "message" | "summary";
  event: TranscriptEvent;
  role: string;
}

export interface BuildContextOptions {
  /** Branch to build; defaults to the last appended entry, as the legacy runtime resumes. */
  leafId?: string;
}

/** How an entry on the path reaches the model, or null when it is bookkeeping only. */
function toContextEntry(event: TranscriptEvent): ContextEntry | null {
  if (isMessageEvent(event)) return { kind: "message", event, role: event.message.role };
  if (event.type === "custom_message") return { kind: "message", event, role: "custom" };
  if (event.type === "branch_summary") return { kind: "summary", event, role: "branchSummary" };
  return null;
}

function entriesOf(events: readonly TranscriptEvent[]): ContextEntry[] {
  const out: ContextEntry[] = [];
  for (const event of events) {
    const entry = toContextEntry(event);
    if (entry !== null) out.push(entry);
  }
  return out;
}

/** Index on `path` where kept messages resume after the compaction at `at`. */
function keptStart(path: readonly TranscriptEvent[], at: number): number {
  const firstKept = path[at]?.firstKeptEntryId;
  if (typeof firstKept !== "string") return at + 1;
  const index = path.findIndex((event) => event.id === firstKept);
  // A kept id that is not an ancestor (other branch, trimmed file) cannot be honoured: the
  // summary then stands for everything before the compaction.
  return index >= 0 && index < at ? index : at + 1;
}

function activePath(events: readonly TranscriptEvent[], leafId?: string): TranscriptEvent[] {
  const tree = TranscriptTree.from(events);
  const leaf = leafId ?? tree.leafId;
  if (leaf === undefined) return [];
  if (!tree.has(leaf)) {
    throw new StateError("E_NOT_FOUND", `no transcript entry with id "${leaf}"`, {
      details: { leafId: leaf },
    });
  }
  const byId = new Map<string, TranscriptEvent>();
  for (const event of events) if (event.type !== "session") byId.set(event.id, event);
  return tree.pathTo(leaf).flatMap((id) => byId.get(id) ?? []);
}

function checkOptions(options: BuildContextOptions): void {
  rejectUnknownOptions(
    options,
    ["leafId"],
    "buildContext",
    (key) => `Expected options { leafId? }, got "${key}"`,
  );
  if (options.leafId !== undefined && typeof options.leafId !== "string") {
    throw new TypeError(`Expected leafId to be a string, got ${typeof options.leafId}`);
  }
}

/**
 * What the model sees for one branch: the entries on the path from the root to the leaf. After a
 * compaction only its summary and the entries it kept (from `firstKeptEntryId`) remain, and only
 * the last compaction on the path counts, because each one already summarises the earlier ones.
 */
export function buildContext(
  events: readonly TranscriptEvent[],
  options: BuildContextOptions = {},
): ContextEntry[] {
  checkOptions(options);
  const path = activePath(events, options.leafId);
  const at = path.findLastIndex((event) => event.type === "compaction");
  const compaction = path[at];
  if (compaction === undefined) return entriesOf(path);
  const kept = path.slice(keptStart(path, at)).filter((event) => event !== compaction);
  return [{ kind: "summary", event: compaction, role: "compactionSummary" }, ...entriesOf(kept)];
}
