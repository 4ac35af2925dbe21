import { chmodSync, existsSync, linkSync, renameSync } from "node:fs";
import { dirname } from "node:path";
import { removeDeadDrafts } from "../db/database-file.js";
import { StateError } from "../db/errors.js";
import { FILE_MODE } from "../db/files.js";
import type { AgentState } from "../home.js";
import { type ClaimedEvent, type ClaimedSession, ColdClaims } from "../stores/agent/cold-claims.js";
import { syncDirectory } from "../stores/agent/cold-files.js";
import type { ColdStore } from "../stores/agent/cold-store.js";
import { type DraftSource, removeDraft, writeColdIndexDraft } from "./cold-index-draft.js";
import { stamp } from "./salvage.js";

/** How far a rebuild is: `done` of about `total` events indexed again. */
export interface ColdIndexProgress {
  agentId: string;
  done: number;
  total: number;
}

export interface ColdIndexRebuild {
  agentId: string;
  /** The cold index file, now the rebuilt one. */
  path: string;
  /** Where the file it replaced was kept (0600, with its journal if it had one); null if none. */
  keptAt: string | null;
  /** The claimed sessions whose rows were written again. */
  sessions: number;
  rows: number;
  events: number;
}

/**
 * Builds an agent's cold index again from the events its claims cover (a cold session's archive,
 * a restored session's hot rows), with the text a move would have copied, and puts it in place.
 *
 * The new file is a draft until it is whole, checked and synced; then, in one transaction of the
 * agent database (whose write lock a move's commit needs too), the claims are read again (they
 * must be the ones the draft was built from), the old file is linked aside, the draft renamed over
 * it, and the claims set to what the draft holds. A claim that was right already (every claim but
 * a wrong one) says the same of the new file, so killed at any point the agent has its old file or
 * the new one, each with claims it covers; a killed run's draft is removed by the next rebuild or
 * move, and rerunning builds again. Run it with no other process using the agent.
 */
export function rebuildColdIndex(
  agent: AgentState,
  options: { now?: number; onProgress?: (progress: ColdIndexProgress) => void } = {},
): ColdIndexRebuild {
  const { agentId, db, cold } = agent;
  const path = cold.index.path;
  const claims = new ColdClaims(db);
  const plan = db.snapshot(() => claims.list());
  const total = plan.reduce((sum, session) => sum + session.throughSeq, 0);
  removeDeadDrafts(path);
  const draft = writeColdIndexDraft(path, plan.map(sourceOf(claims, cold)), {
    driver: db.driverName,
    onEvents: (done) => options.onProgress?.({ agentId, done, total }),
  });
  try {
    const keptAt = db.tx(() => {
      if (!samePlan(plan, claims.list())) throw changedMeanwhile(agentId);
      // Its connection may hold the old file open: the next use opens the new one.
      cold.index.close();
      const kept = replaceFile(path, draft.path, options.now ?? Date.now());
      claims.rewrite(draft.claims);
      return kept;
    });
    const rows = draft.claims.reduce((sum, claim) => sum + claim.rows, 0);
    return { agentId, path, keptAt, sessions: plan.length, rows, events: draft.events };
  } finally {
    removeDraft(draft.path);
  }
}

function sourceOf(claims: ColdClaims, cold: ColdStore): (session: ClaimedSession) => DraftSource {
  return (session) => ({
    session,
    events: () =>
      session.cold
        ? archivedEvents(cold, session)
        : claims.hotEvents(session.sessionNo, session.throughSeq),
  });
}

/** A cold session's events its claim covers, from its archive, a member inflated at a time. */
function* archivedEvents(cold: ColdStore, session: ClaimedSession): IterableIterator<ClaimedEvent> {
  const archive = cold.open(session.sessionId);
  if (archive === undefined || archive === "restored") throw changedMeanwhile(cold.agentId);
  try {
    for (const event of archive.reader.eventsAfter(0)) {
      if (event.seq > session.throughSeq) return;
      yield { seq: event.seq, eventJson: event.eventJson };
    }
  } finally {
    archive.close();
  }
}

function samePlan(plan: readonly ClaimedSession[], now: readonly ClaimedSession[]): boolean {
  return JSON.stringify(plan) === JSON.stringify(now);
}

function changedMeanwhile(agentId: string): StateError {
  return new StateError(
    "E_CONFLICT",
    `the cold sessions of agent "${agentId}" changed while their search index was rebuilt; stop the gateway and run doctor --fix again`,
    { details: { agentId } },
  );
}

/**
 * Puts `draft` at `path` in one rename. What was there is linked aside first, never deleted
 * (with its rollback journal, which must not meet the new file), so `path` always holds a file.
 */
function replaceFile(path: string, draft: string, now: number): string | null {
  let keptAt: string | null = null;
  if (existsSync(path)) {
    keptAt = `${path}.damaged-${stamp(now)}`;
    linkSync(path, keptAt);
    chmodSync(keptAt, FILE_MODE);
    if (existsSync(`${path}-journal`)) renameSync(`${path}-journal`, `${keptAt}-journal`);
  }
  renameSync(draft, path);
  syncDirectory(dirname(path));
  return keptAt;
}
