import { existsSync } from "node:fs";
import { join } from "node:path";
import { columnsOf } from "../../db/columns.js";
import { type Database, openDatabase } from "../../db/database.js";
import { removeDeadDrafts } from "../../db/database-file.js";
import type { SqlStatement } from "../../db/driver.js";
import { type VacuumResult, vacuumDatabase } from "../../db/vacuum.js";
import { coldDirOf } from "./cold-files.js";
import type { ColdRowsJob } from "./cold-index-rows.js";
import { processColdThread } from "./cold-thread.js";
import { withLimit } from "./statement-limits.js";

/** The agent's cold index file (cold-index/0001_init.sql), beside its archives. */
export function coldIndexPathOf(agentDbPath: string): string {
  return join(coldDirOf(agentDbPath), "index.sqlite");
}

/** The session a session number named when its rows were written (for the read view). */
export interface ColdIndexSessionRow {
  session_no: number;
  session_id: string;
}
export const COLD_INDEX_SESSION_COLUMNS = columnsOf<ColdIndexSessionRow>()(
  "session_no",
  "session_id",
);

/** Rowids name an event for good: session_no * 2^32 + seq. */
export const SESSION_SPAN = 4294967296;

/** A MATCH of the cold index, not yet checked against the agent database's claims. */
export interface ColdIndexMatch {
  sessionNo: number;
  seq: number;
  score: number;
}

/**
 * The agent's cold index file: the search rows of events that have been cold, kept out of the
 * agent database (cold-index/0001_init.sql says why and how its rows are claimed). Opened on first
 * use (most agents never move a session cold, and never create it) and closed with the agent's
 * connection. Rollback journal, not WAL: it is written only by moves and `gc`, in bulk, and one
 * descriptor per open agent is what it may cost the pool, not three.
 */
export class ColdIndex {
  readonly path: string;
  private db: Database | undefined;
  private statements: ColdIndexStatements | undefined;
  /** Gives back the descriptor the agent's pool counts while the file is open. */
  private release: (() => void) | undefined;

  constructor(private readonly agentDb: Database) {
    this.path = coldIndexPathOf(agentDb.path);
    agentDb.onClose(() => this.close());
  }

  /** Writes a session's rows (see `writeColdRows`), on this thread. */
  write(job: ColdRowsJob): void {
    writeColdRows(this.open(true) as ColdIndexStatements, job);
  }

  /**
   * Starts `write(job)` on the process's cold storage thread (see cold-thread.ts), so the
   * caller can encode and write the session's archive meanwhile; `finish()` waits for it and
   * throws what it threw, `settle()` (after a failure elsewhere) waits for it and ignores it.
   * Where no thread serves (one core, the TypeScript sources, a worker thread), or for a few
   * rows, `finish()` writes them itself.
   */
  startWrite(job: ColdRowsJob): ColdIndexWrite {
    this.open(true);
    const thread = processColdThread();
    const ticket =
      job.rows.length >= THREAD_FROM_ROWS
        ? thread.post({ ...job, kind: "index", path: this.path, driver: this.agentDb.driverName })
        : undefined;
    if (ticket === undefined) return { finish: () => this.write(job), settle: () => {} };
    let waited = false;
    const wait = () => {
      if (waited) return;
      waited = true;
      thread.wait(ticket);
    };
    return {
      finish: wait,
      settle: () => {
        try {
          wait();
        } catch {
          // The rows are unclaimed whatever became of them: no search finds them.
        }
      },
    };
  }

  /** The best `limit` rows matching `match` (an FTS5 query), in one session's rows or in all. */
  match(match: string, limit: number, sessionNo?: number): ColdIndexMatch[] {
    const s = this.open(false);
    if (s === undefined) return [];
    const rows =
      sessionNo === undefined
        ? s.matchAll(limit).all(match)
        : s
            .matchRange(limit)
            .all(match, sessionNo * SESSION_SPAN, (sessionNo + 1) * SESSION_SPAN - 1);
    return rows.map((row) => ({
      sessionNo: Math.floor(row.rowid / SESSION_SPAN),
      seq: row.rowid % SESSION_SPAN,
      score: row.score,
    }));
  }

  /** The session numbers that have rows here. */
  sessions(): number[] {
    const s = this.open(false);
    return s === undefined ? [] : s.listSessions.all().map((row) => row.session_no);
  }

  /**
   * Drops a session's rows above `through` (all of them when undefined, and its name), in one
   * transaction; returns how many rows went.
   */
  forget(sessionNo: number, through: number | undefined): number {
    const s = this.open(false);
    if (s === undefined) return 0;
    const base = sessionNo * SESSION_SPAN;
    return s.db.tx(() => {
      const dropped = s.dropRange.run(base + (through ?? -1) + 1, base + SESSION_SPAN - 1).changes;
      if (through === undefined) s.unnameSession.run(sessionNo);
      return dropped;
    });
  }

  /** How many rows a session has here up to `through`. */
  covered(sessionNo: number, through: number): number {
    const s = this.open(false);
    if (s === undefined) return 0;
    const base = sessionNo * SESSION_SPAN;
    return s.coverage.get(base, base + through)?.n ?? 0;
  }

  /** Runs `fn` on the file (created if missing) in one transaction holding its write lock. */
  exclusively<T>(fn: (file: Database) => T): T {
    const s = this.open(true) as ColdIndexStatements;
    return s.db.tx(() => fn(s.db));
  }

  /**
   * The file's connection, for a reader that needs the database itself (a backup's snapshot);
   * undefined when the agent has no file, which this never creates.
   */
  openFile(): Database | undefined {
    return this.open(false)?.db;
  }

  /** Gives the file's free pages back (after `forget`s); undefined when there is no file. */
  vacuum(): VacuumResult | undefined {
    const s = this.open(false);
    return s === undefined ? undefined : vacuumDatabase(s.db);
  }

  close(): void {
    this.db?.close();
    this.db = undefined;
    this.statements = undefined;
    this.release?.();
    this.release = undefined;
  }

  private open(create: boolean): ColdIndexStatements | undefined {
    if (this.statements !== undefined && this.db?.isOpen) return this.statements;
    const readonly = this.agentDb.readonly;
    if ((readonly || !create) && !existsSync(this.path)) return undefined;
    // A process killed while creating the file may have left its draft beside it, linked or not.
    if (create) removeDeadDrafts(this.path);
    this.db = openDatabase({
      path: this.path,
      role: "cold-index",
      journalMode: "rollback",
      checkpoints: "inline",
      driver: this.agentDb.driverName,
      ...(readonly ? { readonly: true } : {}),
    });
    this.statements = statementsOf(this.db);
    this.release ??= this.agentDb.holdDescriptor();
    return this.statements;
  }
}

/** A write of the cold index under way (see `ColdIndex.startWrite`). */
export interface ColdIndexWrite {
  finish(): void;
  settle(): void;
}

/**
 * Below this many rows a session's index write is a few milliseconds: handing it to the thread
 * would save less than the copy of its rows and the wake-ups cost.
 */
const THREAD_FROM_ROWS = 256;

/**
 * Writes a job's rows in one transaction of the cold index, and first drops any row of the
 * session above `through`: left by a move that did not commit, or by an earlier session under the
 * same number. `onProgress` hears the rows inserted so far, now and then.
 */
export function writeColdRows(
  s: ColdIndexStatements,
  job: ColdRowsJob,
  onProgress?: (rows: number) => void,
): void {
  const base = job.sessionNo * SESSION_SPAN;
  s.db.tx(() => {
    // A DELETE on an FTS5 table scans its content even when the range holds no row.
    const above = [base + job.through + 1, base + SESSION_SPAN - 1] as const;
    if (s.anyInRange.get(...above)?.found === 1) s.dropRange.run(...above);
    for (const [i, row] of job.rows.entries()) {
      s.insert.run(base + row.seq, row.text);
      if (i % 512 === 511) onProgress?.(i + 1);
    }
    s.nameSession.run(job.sessionNo, job.sessionId);
  });
}

export interface ColdIndexStatements {
  db: Database;
  insert: SqlStatement;
  dropRange: SqlStatement;
  nameSession: SqlStatement;
  unnameSession: SqlStatement;
  listSessions: SqlStatement<{ session_no: number }>;
  coverage: SqlStatement<{ n: number }>;
  anyInRange: SqlStatement<{ found: number }>;
  matchAll: (limit: number) => SqlStatement<{ rowid: number; score: number }>;
  matchRange: (limit: number) => SqlStatement<{ rowid: number; score: number }>;
}

export function statementsOf(db: Database): ColdIndexStatements {
  // Sorted by SQLite on bm25(), as the hot index is (transcript-search.ts says why).
  const best = (where: string, limit: number) =>
    `SELECT rowid, bm25(cold_fts) AS score FROM cold_fts WHERE ${where}
     ORDER BY score LIMIT ${limit}`;
  return {
    db,
    insert: db.prepareOnUse("INSERT INTO cold_fts (rowid, text) VALUES (?, ?)"),
    dropRange: db.prepareOnUse("DELETE FROM cold_fts WHERE rowid BETWEEN ? AND ?"),
    nameSession: db.prepareOnUse(
      `INSERT INTO cold_index_sessions (session_no, session_id) VALUES (?, ?)
       ON CONFLICT (session_no) DO UPDATE SET session_id = excluded.session_id`,
    ),
    unnameSession: db.prepareOnUse("DELETE FROM cold_index_sessions WHERE session_no = ?"),
    listSessions: db.prepareOnUse("SELECT session_no FROM cold_index_sessions ORDER BY session_no"),
    // Counted on FTS5's own row-size table (one integer-keyed row per indexed row): counting the
    // virtual table reads every row's text, about 30 ms for a session of 4,000 events.
    coverage: db.prepareOnUse(
      "SELECT count(*) AS n FROM cold_fts_docsize WHERE id BETWEEN ? AND ?",
    ),
    anyInRange: db.prepareOnUse(
      "SELECT EXISTS (SELECT 1 FROM cold_fts_docsize WHERE id BETWEEN ? AND ?) AS found",
    ),
    matchAll: withLimit(db, (limit) => best("cold_fts MATCH ?", limit)),
    matchRange: withLimit(db, (limit) => best("cold_fts MATCH ? AND rowid BETWEEN ? AND ?", limit)),
  };
}
