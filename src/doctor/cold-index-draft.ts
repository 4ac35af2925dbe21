import { closeSync, fsyncSync, openSync, rmSync } from "node:fs";
import { uncoveredIn } from "../backup/cold-index-coverage.js";
import { type Database, openDatabase } from "../db/database.js";
import { draftPath } from "../db/database-file.js";
import type { DriverName } from "../db/driver.js";
import { StateError } from "../db/errors.js";
import type { ClaimedEvent, ClaimedSession, ClaimFigures } from "../stores/agent/cold-claims.js";
import {
  type ColdIndexStatements,
  SESSION_SPAN,
  statementsOf,
} from "../stores/agent/cold-index.js";
import { storedEventText } from "../transcript/indexed-text.js";

/** Events read and indexed per transaction of the draft: a few MB of text at most. */
const BATCH_EVENTS = 2000;

/** A claimed session and a way to read the events its claim covers, in seq order. */
export interface DraftSource {
  session: ClaimedSession;
  events: () => Iterable<ClaimedEvent>;
}

/** A finished draft: a whole cold index file beside the live one, not yet in its place. */
export interface ColdIndexDraft {
  path: string;
  /** What each claim is to say of the rows written. */
  claims: ClaimFigures[];
  events: number;
}

/**
 * Writes a new cold index file beside `target` (named as database-file.ts names its drafts, so a
 * killed process's draft is removed by the next rebuild or move) holding each source's rows as a
 * move would have written them, checks it, and syncs it to disk. Memory stays bounded: events
 * are read as a stream and committed in batches. A failed draft is removed.
 */
export function writeColdIndexDraft(
  target: string,
  sources: readonly DraftSource[],
  options: { driver: DriverName; onEvents?: (done: number) => void },
): ColdIndexDraft {
  const path = draftPath(target);
  try {
    const db = openDatabase({
      path,
      role: "cold-index",
      journalMode: "rollback",
      checkpoints: "inline",
      driver: options.driver,
    });
    let draft: ColdIndexDraft;
    try {
      // Nothing reads a draft and a killed build's is thrown away: it is synced once, when whole.
      db.exec("PRAGMA synchronous = OFF");
      draft = fill(db, path, sources, options.onEvents);
      checkDraft(db, draft);
    } finally {
      db.close();
    }
    syncFile(path);
    return draft;
  } catch (error) {
    removeDraft(path);
    throw error;
  }
}

/** Removes a draft and its journal, if they are there. */
export function removeDraft(path: string): void {
  rmSync(path, { force: true });
  rmSync(`${path}-journal`, { force: true });
}

function fill(
  db: Database,
  path: string,
  sources: readonly DraftSource[],
  onEvents: ((done: number) => void) | undefined,
): ColdIndexDraft {
  // The statements a move writes with, so a rebuilt row is written as a moved one.
  const statements = statementsOf(db);
  const counter = { events: 0, onEvents };
  const claims = sources.map((source) => fillSession(statements, source, counter));
  return { path, claims, events: counter.events };
}

/** One session's rows, BATCH_EVENTS events per transaction; its figures as a claim. */
function fillSession(
  { db, insert, nameSession }: ColdIndexStatements,
  { session, events }: DraftSource,
  counter: { events: number; onEvents: ((done: number) => void) | undefined },
): ClaimFigures {
  const base = session.sessionNo * SESSION_SPAN;
  const claim = {
    sessionNo: session.sessionNo,
    throughSeq: session.throughSeq,
    rows: 0,
    textBytes: 0,
  };
  const stream = events()[Symbol.iterator]();
  try {
    for (let more = true; more; ) {
      more = db.tx(() => {
        for (let n = 0; n < BATCH_EVENTS; n++) {
          const next = stream.next();
          if (next.done) return false;
          counter.events++;
          // An event without searchable text has no row, as in the hot index.
          const text = storedEventText(next.value.eventJson);
          if (text === "") continue;
          insert.run(base + next.value.seq, text);
          claim.rows++;
          claim.textBytes += Buffer.byteLength(text);
        }
        return true;
      });
      counter.onEvents?.(counter.events);
    }
  } finally {
    // Closes the session's archive when the stream stopped early (a throw).
    stream.return?.();
  }
  nameSession.run(session.sessionNo, session.sessionId);
  return claim;
}

/** The draft must be sound and hold each claim's rows before anything relies on it. */
function checkDraft(db: Database, draft: ColdIndexDraft): void {
  const check = db.quickCheck();
  const short = uncoveredIn(db, draft.claims);
  if (check.length === 1 && check[0] === "ok" && short.length === 0) return;
  throw new StateError(
    "E_CORRUPT",
    `the rebuilt cold index ${draft.path} does not read back as written`,
    {
      details: { path: draft.path, check, uncovered: short },
    },
  );
}

function syncFile(path: string): void {
  const fd = openSync(path, "r+");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
