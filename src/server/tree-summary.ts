import type { Database } from "../db/database.js";
import type { SqlStatement } from "../db/driver.js";
import type { AgentState } from "../home.js";
import { TranscriptTree } from "../transcript/tree.js";

/** Lists in a summary stop here: a pathological tree must not make a huge response. */
const MAX_LISTED = 100;
const MAX_SUMMARY_CHARS = 4000;
const SUMMARY_TYPES = new Set(["compaction", "branch_summary"]);

interface IdentityRow {
  event_id: string;
  seq: number;
  event_type: string;
  /** The parent id when the event has one, else null. */
  parent: string | null;
}

export interface TreeEventRef {
  id: string;
  seq: number;
  type: string;
}

export interface TranscriptTreeSummary {
  sessionId: string;
  /** Where the next append attaches; the end of the current branch. */
  leafEventId: string | null;
  /** Events in the tree (the session header is not one). */
  nodes: number;
  roots: number;
  danglingParents: number;
  /** Events from the root to the current leaf. */
  currentBranchLength: number;
  /** Seq ranges [from, to] of events that are not on the current branch (abandoned branches). */
  offBranch: Array<[number, number]>;
  branchPoints: Array<TreeEventRef & { children: Array<TreeEventRef & { current: boolean }> }>;
  leaves: Array<TreeEventRef & { depth: number; current: boolean }>;
  /** Compactions and branch summaries, in seq order, with their text. */
  summaries: Array<TreeEventRef & { summary: string; tokensBefore: number | null }>;
  labels: Array<TreeEventRef & { targetId: string | null; label: string | null }>;
  /** True when a list above stopped at its limit. */
  truncated: boolean;
}

const statements = new WeakMap<Database, SqlStatement<IdentityRow>>();

/**
 * Key columns only: the tree's shape and seqs without reading a byte of event JSON. Turning
 * rows into JS objects is most of the cost (the scan itself is a few ms for 34,000 events), so
 * the statement returns as few columns as it can, in whatever order SQLite finds cheapest,
 * sorted here.
 */
function identities(db: Database, sessionId: string): IdentityRow[] {
  let statement = statements.get(db);
  if (statement === undefined) {
    statement = db.prepare<IdentityRow>(
      `SELECT event_id, seq, event_type, parent_id AS parent FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?)`,
    );
    statements.set(db, statement);
  }
  return statement.all(sessionId).sort((a, b) => a.seq - b.seq);
}

/**
 * A cold session's identities, read from its archive (its events have no hot rows); undefined
 * when the session is hot, or was restored while this looked.
 */
function coldIdentities(agent: AgentState, sessionId: string): IdentityRow[] | undefined {
  const archive = agent.cold.open(sessionId);
  if (archive === undefined || archive === "restored") return undefined;
  try {
    const rows: IdentityRow[] = [];
    for (const e of archive.reader.eventsAfter(0)) {
      rows.push({ event_id: e.eventId, seq: e.seq, event_type: e.eventType, parent: e.parentId });
    }
    return rows;
  } finally {
    archive.close();
  }
}

function offBranchRanges(rows: IdentityRow[], tree: TranscriptTree, onBranch: Set<string>) {
  const ranges: Array<[number, number]> = [];
  let open: [number, number] | undefined;
  for (const row of rows) {
    if (!tree.has(row.event_id)) continue;
    if (onBranch.has(row.event_id)) {
      open = undefined;
    } else if (open) {
      open[1] = row.seq;
    } else {
      open = [row.seq, row.seq];
      ranges.push(open);
    }
  }
  return ranges;
}

function text(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

/**
 * The shape of a session's transcript for the dashboard: the current branch, where the tree
 * forks, its leaves, its compaction and branch summaries and labels. Reads identity rows, plus
 * the few summary and label events themselves.
 */
export function summarizeTree(agent: AgentState, sessionId: string): TranscriptTreeSummary {
  const session = agent.lifecycle.get(sessionId);
  const rows = coldIdentities(agent, sessionId) ?? identities(agent.db, sessionId);
  const tree = TranscriptTree.from(
    rows.map((r) => ({ id: r.event_id, type: r.event_type, parentId: r.parent })),
  );
  const seqOf = new Map(rows.map((r) => [r.event_id, r.seq]));
  const ref = (id: string): TreeEventRef => ({
    id,
    seq: seqOf.get(id) ?? 0,
    type: tree.get(id)?.type ?? "",
  });
  const leafEventId = session.leafEventId ?? tree.leafId ?? null;
  const branch = leafEventId === null ? [] : tree.pathTo(leafEventId);
  const onBranch = new Set(branch);
  const points = tree.branchPoints();
  const leaves = tree.leaves();
  const summaryIds = tree.ids().filter((id) => SUMMARY_TYPES.has(tree.get(id)?.type ?? ""));
  const labelIds = tree.ids().filter((id) => tree.get(id)?.type === "label");
  const event = (id: string) => agent.transcripts.get(sessionId, id)?.event;
  return {
    sessionId,
    leafEventId,
    nodes: tree.size,
    roots: tree.roots().length,
    danglingParents: tree.danglingParents().length,
    currentBranchLength: branch.length,
    offBranch: offBranchRanges(rows, tree, onBranch),
    branchPoints: points.slice(0, MAX_LISTED).map((id) => ({
      ...ref(id),
      children: tree.children(id).map((child) => ({ ...ref(child), current: onBranch.has(child) })),
    })),
    leaves: leaves.slice(-MAX_LISTED).map((id) => ({
      ...ref(id),
      depth: tree.pathTo(id).length,
      current: id === leafEventId,
    })),
    summaries: summaryIds.slice(0, MAX_LISTED).map((id) => {
      const found = event(id);
      const summary = text(found?.summary) ?? "";
      const tokens = found?.tokensBefore;
      return {
        ...ref(id),
        summary:
          summary.length > MAX_SUMMARY_CHARS ? `${summary.slice(0, MAX_SUMMARY_CHARS)}…` : summary,
        tokensBefore: typeof tokens === "number" ? tokens : null,
      };
    }),
    labels: labelIds.slice(-MAX_LISTED).map((id) => {
      const found = event(id);
      return { ...ref(id), targetId: text(found?.targetId), label: text(found?.label) };
    }),
    truncated: [points, leaves, summaryIds, labelIds].some((list) => list.length > MAX_LISTED),
  };
}
