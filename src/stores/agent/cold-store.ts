import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { checkSessionId } from "../../ids.js";
import {
  type ArchivedBlob,
  type ArchivedEvent,
  ArchiveReader,
  type EncodedArchive,
  encodeArchive,
} from "../../transcript/cold-archive.js";
import {
  coldDirOf,
  fileSize,
  listColdFiles,
  newArchiveName,
  openArchiveFile,
  removeFile,
  sessionNoOfFile,
  writeArchiveFile,
} from "./cold-files.js";
import { ColdIndex } from "./cold-index.js";
import { ColdArchive } from "./cold-reader.js";
import { ColdRows, type SessionRows } from "./cold-rows.js";
import { inflateAhead } from "./cold-thread.js";
import type { TranscriptIndex } from "./transcript-index.js";
import type { ColdSessionRow } from "./transcript-rows.js";

/** Stale index rows dropped per transaction: about 1 MB of text to tokenize, 10-20 ms. */
const PURGE_BATCH = 2000;

export interface ColdMoveResult {
  sessionId: string;
  /** The archive, relative to the home. */
  archivePath: string;
  sha256: string;
  bytes: number;
  events: number;
  /** True when the session was cold already (nothing was written). */
  alreadyCold: boolean;
}

/** A cold session's archive, as `info()` describes it. */
export interface ColdSessionInfo {
  sessionId: string;
  /** The archive, relative to the home. */
  archivePath: string;
  sha256: string;
  bytes: number;
  events: number;
  firstSeq: number;
  lastSeq: number;
  movedAt: number;
}

function coldInfoFromRow(sessionId: string, row: ColdSessionRow): ColdSessionInfo {
  return {
    sessionId,
    archivePath: row.archive_path,
    sha256: row.sha256,
    bytes: row.bytes,
    events: row.events,
    firstSeq: row.first_seq,
    lastSeq: row.last_seq,
    movedAt: row.moved_at,
  };
}

/**
 * Cold storage of idle sessions: `move` writes a session's events and blobs to an archive in the
 * agent's `cold/` directory and deletes their hot rows; reads of a cold session come from the
 * archive (TranscriptStore does that transparently); `restore` puts the rows back exactly (same
 * seqs, same event ids), which any append to the session does first.
 *
 * Crash safety of a move: the archive is written to a temp file, fsynced, renamed, the directory
 * fsynced, and the file read back and verified (SHA-256, counts); the session's search rows are
 * written to the cold index (ColdIndex) and committed there; then one transaction records the
 * cold row, claims those search rows and deletes the hot rows. Killed at any point, every event is
 * either hot or in a verified archive its cold row names, never both; a file without a row is
 * removed by the next move of that session or `sweep()`, and search rows without a claim are
 * never found (the next move of the session or `gc` drops them).
 */
export class ColdStore {
  private readonly rows: ColdRows;
  /** The search rows of events that have been cold, in a file of their own. */
  readonly index: ColdIndex;
  private readonly selectCold: SqlStatement<ColdSessionRow>;
  private readonly selectArchiveUse: SqlStatement<{ found: number }>;
  /** Archives whose cold row a transaction deletes (a restore, a deleted session): removed after it commits. */
  private readonly releasedFiles: string[] = [];

  constructor(
    private readonly db: Database,
    readonly agentId: string,
    private readonly hotIndex: TranscriptIndex,
  ) {
    this.rows = new ColdRows(db);
    this.index = new ColdIndex(db);
    this.selectCold = db.prepareOnUse(
      `SELECT c.* FROM cold_sessions c JOIN sessions s ON s.session_no = c.session_no
       WHERE s.session_id = ?`,
    );
    this.selectArchiveUse = db.prepareOnUse(
      "SELECT 1 AS found FROM cold_sessions WHERE archive_path = ?",
    );
  }

  /** Where and how a session is archived, or undefined while it is hot. */
  info(sessionId: string): ColdSessionInfo | undefined {
    const row = this.selectCold.get(checkSessionId(sessionId));
    return row === undefined ? undefined : coldInfoFromRow(sessionId, row);
  }

  isCold(sessionId: string): boolean {
    return this.selectCold.get(checkSessionId(sessionId)) !== undefined;
  }

  /** Moves a session's events out of the hot tables into an archive; see the class comment. */
  move(sessionId: string): ColdMoveResult {
    checkSessionId(sessionId);
    if (this.db.inTransaction) throw new TypeError("Expected move() outside a transaction");
    const dir = this.coldDir();
    // Every event's search text is copied from the hot index, so it must hold them all.
    this.hotIndex.indexPending();
    const found = this.db.snapshot(() => this.collect(sessionId));
    if ("cold" in found) {
      this.removeLeftovers(found.cold.session_no);
      return { ...this.resultOf(sessionId, found.cold), alreadyCold: true };
    }
    if (!found.indexed) throw changedWhileMoving(sessionId);
    const { sessionNo, claimedThrough: through, indexRows: rows } = found;
    // The search rows go to the cold index (on its thread, where there is one) while the archive
    // is encoded and written; the commit checks they are there.
    const indexing = this.index.startWrite({ sessionNo, sessionId, through, rows });
    const name = newArchiveName(sessionNo);
    let path: string | undefined;
    let encoded: EncodedArchive;
    try {
      encoded = encodeArchive(sessionId, found.events, found.blobs);
      path = this.write(dir, name, encoded);
      this.verifyFile(path, encoded);
      indexing.finish();
    } catch (error) {
      if (path !== undefined) removeFile(path);
      indexing.settle();
      throw error;
    }
    const relative = join("agents", this.agentId, "agent", "cold", name);
    try {
      this.db.tx(() => this.commitMove(sessionId, found, encoded, path as string, relative));
    } catch (error) {
      removeFile(path);
      throw error;
    }
    this.removeLeftovers(sessionNo);
    // What was committed, not a read after it: another process may have restored it since.
    const moved = { archivePath: relative, sha256: encoded.sha256, bytes: encoded.bytes };
    return { sessionId, ...moved, events: found.events.length, alreadyCold: false };
  }

  /**
   * Puts a cold session's rows back (same seqs and event ids, new row ids) and removes its cold
   * row, in one transaction; the archive is deleted once that transaction has committed. Their
   * search rows stay in the cold index (its claim stays), so the new ids are marked indexed.
   * False when the session was not cold.
   */
  restore(sessionId: string): boolean {
    checkSessionId(sessionId);
    const restored = this.db.tx(() => this.restoreInTx(sessionId));
    this.removeReleasedFiles();
    return restored;
  }

  /**
   * The restore inside the caller's transaction; its archive is queued and deleted by
   * `removeReleasedFiles()` after the outermost transaction commits.
   */
  restoreInTx(sessionId: string): boolean {
    const row = this.selectCold.get(sessionId);
    if (row === undefined) return false;
    const path = this.pathOf(row);
    const file = openArchiveFile(path);
    if (file === undefined) {
      throw new StateError(
        "E_CORRUPT",
        `the archive of cold session ${sessionId} is missing: ${path}`,
        {
          details: { sessionId, path },
        },
      );
    }
    try {
      this.hotIndex.indexPending();
      const reader = new ArchiveReader(file.readAt, file.size);
      // Later members inflate on the cold storage thread while the rows of earlier ones go in.
      this.rows.putBack(row, reader, inflateAhead(path, reader.index.members));
      this.hotIndex.coverThrough(this.rows.topEventId());
    } finally {
      file.close();
    }
    this.releasedFiles.push(path);
    return true;
  }

  /** Deletes the archives of committed restores and deletes (none while a transaction is open). */
  removeReleasedFiles(): void {
    if (this.releasedFiles.length === 0 || this.db.inTransaction) return;
    for (const path of this.releasedFiles.splice(0)) {
      // Only if no row names it: a rolled-back restore left its cold row in place.
      const name = join("agents", this.agentId, "agent", "cold", path.split(/[\\/]/).at(-1) ?? "");
      if (this.selectArchiveUse.get(name) === undefined) removeFile(path);
    }
  }

  /**
   * A cold session's archive open for reads; undefined when the session is hot, "restored" when
   * it was cold but a restore removed its archive meanwhile (read the hot rows again).
   */
  open(sessionId: string): ColdArchive | "restored" | undefined {
    const row = this.selectCold.get(sessionId);
    if (row === undefined) return undefined;
    const file = openArchiveFile(this.pathOf(row));
    if (file !== undefined) return new ColdArchive(sessionId, row, file);
    if (this.selectCold.get(sessionId) === undefined) return "restored";
    throw new StateError("E_CORRUPT", `the archive of cold session ${sessionId} is missing`, {
      details: { sessionId, path: row.archive_path },
    });
  }

  /**
   * Removes files of the cold directory no cold row names (left by a move killed before its
   * commit, or a restore killed after it). Holds the write lock: a move in another process checks
   * its file under the same lock before it commits.
   */
  sweep(): number {
    return this.db.tx(() => this.removeUnreferenced(() => true));
  }

  /**
   * Drops the rows moves left in transcript_fts (see ColdRows.takeOut), in transactions of
   * PURGE_BATCH ids so a writer of another process waits little, then the cold index's rows no
   * claim covers (a deleted session's, a failed move's); returns how many. Run by `gc`.
   */
  purgeIndex(): number {
    let purged = 0;
    for (;;) {
      const n = this.db.tx(() => this.rows.purgeStaleIndex(PURGE_BATCH));
      if (n === 0) break;
      purged += n;
    }
    for (const sessionNo of this.index.sessions()) {
      // Under the write lock a move's commit takes too: it checks its rows are still there.
      purged += this.db.tx(() =>
        this.index.forget(sessionNo, this.rows.claimOf(sessionNo)?.through_seq),
      );
    }
    return purged;
  }

  private removeLeftovers(sessionNo: number): void {
    this.db.tx(() => this.removeUnreferenced((no) => no === sessionNo));
  }

  private removeUnreferenced(matches: (sessionNo: number) => boolean): number {
    const dir = this.coldDir();
    let removed = 0;
    for (const name of listColdFiles(dir)) {
      if (!matches(sessionNoOfFile(name) as number)) continue;
      const relative = join("agents", this.agentId, "agent", "cold", name);
      if (this.selectArchiveUse.get(relative) !== undefined) continue;
      removeFile(join(dir, name));
      removed++;
    }
    return removed;
  }

  private collect(sessionId: string): SessionRows | { cold: ColdSessionRow } {
    const cold = this.selectCold.get(sessionId);
    if (cold !== undefined) return { cold };
    const rows = this.rows.collect(sessionId);
    if (rows === undefined || rows.events.length === 0) {
      throw new StateError("E_NOT_FOUND", `session ${sessionId} has no events to move`, {
        details: { agentId: this.agentId, sessionId },
      });
    }
    return rows;
  }

  private write(dir: string, name: string, encoded: EncodedArchive): string {
    try {
      return writeArchiveFile(dir, name, encoded.chunks);
    } catch (error) {
      // A full disk, or a sweep in another process that took the temp file: nothing moved.
      removeFile(join(dir, name));
      removeFile(join(dir, `${name}.tmp`));
      throw new StateError("E_IO", `cannot write cold archive ${join(dir, name)}`, {
        cause: error,
      });
    }
  }

  /**
   * Reads the written file back: its SHA-256 must be the one of the bytes encoded, and its index
   * must count the session's events. The members are not inflated again: the hash already says
   * they are the bytes the encoder made, and each carries its own CRC for every later read.
   */
  private verifyFile(path: string, encoded: EncodedArchive): void {
    const file = openArchiveFile(path);
    if (file === undefined) throw new StateError("E_IO", `cold archive ${path} vanished`);
    try {
      const bytes = file.readAt(0, file.size);
      const sha = createHash("sha256").update(bytes).digest("hex");
      if (sha !== encoded.sha256 || file.size !== encoded.bytes) {
        throw new StateError("E_IO", `cold archive ${path} does not read back as written`);
      }
      const { events, firstSeq, lastSeq } = encoded.index;
      new ArchiveReader(file.readAt, file.size).checkCounts({ events, firstSeq, lastSeq });
    } finally {
      file.close();
    }
  }

  private commitMove(
    sessionId: string,
    found: SessionRows,
    encoded: EncodedArchive,
    path: string,
    relative: string,
  ): void {
    const last = found.events.at(-1) as ArchivedEvent;
    if (
      this.selectCold.get(sessionId) !== undefined ||
      !this.rows.unchanged(found) ||
      (this.rows.claimOf(found.sessionNo)?.through_seq ?? 0) !== found.claimedThrough
    ) {
      throw changedWhileMoving(sessionId);
    }
    // Checked under the write lock a sweep holds too: the verified file is still there.
    if (fileSize(path) !== encoded.bytes) {
      throw new StateError("E_IO", `cold archive ${path} vanished before its commit`);
    }
    // And so does `gc` when it drops unclaimed search rows: the ones this move wrote are there.
    const claimed = this.rows.claimOf(found.sessionNo)?.rows ?? 0;
    if (this.index.covered(found.sessionNo, last.seq) !== claimed + found.indexRows.length) {
      throw changedWhileMoving(sessionId);
    }
    this.hotIndex.indexPending();
    this.rows.takeOut(found, {
      archive_path: relative,
      sha256: encoded.sha256,
      bytes: encoded.bytes,
      events: found.events.length,
      first_seq: found.events[0]?.seq ?? 0,
      last_seq: last.seq,
      last_event_id: last.eventId,
      last_event_type: last.eventType,
      last_created_at: last.createdAt,
      moved_at: Date.now(),
    });
  }

  private resultOf(sessionId: string, row: ColdSessionRow): Omit<ColdMoveResult, "alreadyCold"> {
    return {
      sessionId,
      archivePath: row.archive_path,
      sha256: row.sha256,
      bytes: row.bytes,
      events: row.events,
    };
  }

  private pathOf(row: ColdSessionRow): string {
    return join(this.coldDir(), row.archive_path.split(/[\\/]/).at(-1) ?? "");
  }

  private coldDir(): string {
    if (this.db.path === ":memory:" || this.db.path === "") {
      throw new StateError("E_UNSUPPORTED", "cold storage needs an agent database on disk");
    }
    return coldDirOf(this.db.path);
  }
}

function changedWhileMoving(sessionId: string): StateError {
  return new StateError("E_CONFLICT", `session ${sessionId} changed while it was being moved`, {
    details: { sessionId },
  });
}

export type { ArchivedBlob };
