import { randomUUID } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { checkSessionId } from "../../ids.js";
import type { ContextEntry } from "../../transcript/context.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import type { JsonValue } from "../json.js";
import type { SessionEntry, SessionStore } from "./session-store.js";
import type { SnapshotStore, TranscriptSnapshot } from "./snapshot-store.js";
import type { TranscriptBranches } from "./transcript-branches.js";
import {
  SESSION_WITH_TAIL,
  type SessionInfo,
  type SessionTailRow,
  sessionFromRow,
} from "./transcript-rows.js";
import { TRANSCRIPT_HEADER_VERSION, type TranscriptStore } from "./transcript-store.js";

export interface StartOptions {
  /** Id of the new session (default: a new UUID). */
  sessionId?: string;
  /** Working directory recorded in the session header. */
  cwd?: string;
}

export interface ResetOptions extends StartOptions {
  /** Why the previous session ended (default "reset"). */
  reason?: string;
  /** What the user said with the reset, kept on the new session. */
  message?: string;
}

export interface CompactOptions extends StartOptions {
  summary: string;
  /** First event of the current branch to carry over verbatim after the summary. */
  firstKeptEntryId?: string;
  tokensBefore?: number;
  details?: JsonValue;
}

export interface RestoredSession {
  entry: SessionEntry;
  session: SessionInfo;
  /** Model context of the active session only: earlier sessions are not replayed. */
  context: ContextEntry[];
}

interface NewSessionRow {
  sessionId: string;
  sessionKey: string;
  reason: string | null;
  message: string | null;
  predecessorId: string | null;
  cwd: string | undefined;
}

/**
 * Sessions are first-class: a session key (the routing slot) points at its active session, and
 * reset or compaction end that session and start a successor instead of rewriting history.
 */
export class SessionLifecycle {
  private readonly insertSession: SqlStatement;
  private readonly endSession: SqlStatement;
  private readonly selectSession: SqlStatement<SessionTailRow>;
  private readonly selectByKey: SqlStatement<SessionTailRow>;
  private readonly deleteSession: SqlStatement;
  private readonly upsertKey: SqlStatement;
  private readonly insertImported: SqlStatement;
  private readonly setEnded: SqlStatement;
  private readonly setStarted: SqlStatement;

  constructor(
    private readonly db: Database,
    private readonly entries: SessionStore,
    private readonly transcripts: TranscriptStore,
    private readonly branches: TranscriptBranches,
    private readonly snapshots: SnapshotStore,
  ) {
    this.insertSession = db.prepare(
      `INSERT INTO sessions (session_id, session_key, created_at, updated_at, reset_reason, reset_message, predecessor_id)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.endSession = db.prepare(
      "UPDATE sessions SET ended_at = ?, updated_at = max(updated_at, ?) WHERE session_id = ? AND ended_at IS NULL",
    );
    this.selectSession = db.prepare(`${SESSION_WITH_TAIL} WHERE s.session_id = ?`);
    this.selectByKey = db.prepare(
      `${SESSION_WITH_TAIL} WHERE s.session_key = ? ORDER BY s.created_at, s.session_no`,
    );
    this.deleteSession = db.prepare("DELETE FROM sessions WHERE session_id = ?");
    this.upsertKey = db.prepare(
      `INSERT INTO sessions (session_id, session_key, created_at, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE SET session_key = coalesce(session_key, excluded.session_key),
         updated_at = max(updated_at, excluded.updated_at)`,
    );
    this.insertImported = db.prepare(
      `INSERT INTO sessions (session_id, session_key, created_at, updated_at, ended_at, reset_reason, reset_message, predecessor_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING`,
    );
    this.setEnded = db.prepare(
      "UPDATE sessions SET ended_at = ? WHERE session_id = ? AND ended_at IS NULL",
    );
    this.setStarted = db.prepare(
      "UPDATE sessions SET created_at = min(created_at, ?) WHERE session_id = ?",
    );
  }

  get(sessionId: string): SessionInfo {
    return this.branches.session(sessionId);
  }

  /** Sessions of a key, oldest first. */
  list(sessionKey: string): SessionInfo[] {
    return this.selectByKey.all(sessionKey).map(sessionFromRow);
  }

  /** The session the key's entry points at, unless it has ended. */
  active(sessionKey: string): SessionInfo | undefined {
    const sessionId = this.entries.get(sessionKey)?.entry.sessionId;
    if (typeof sessionId !== "string") return undefined;
    const row = this.selectSession.get(sessionId);
    return row && row.ended_at === null ? sessionFromRow(row) : undefined;
  }

  /** Starts the first session of a key; `E_CONFLICT` when one is active (use `reset`). */
  start(sessionKey: string, options: StartOptions = {}): SessionInfo {
    return this.db.tx(() => {
      const current = this.active(sessionKey);
      if (current) {
        throw new StateError(
          "E_CONFLICT",
          `session key ${sessionKey} already has an active session ${current.sessionId}`,
          { details: { sessionKey, sessionId: current.sessionId } },
        );
      }
      return this.begin(this.newRow(sessionKey, options, null, null, null));
    });
  }

  /** The active session of a key, started when there is none. */
  ensure(sessionKey: string, options: StartOptions = {}): SessionInfo {
    return this.db.tx(() => this.active(sessionKey) ?? this.start(sessionKey, options));
  }

  /** Ends the active session (if any) and starts its successor, which the entry then points at. */
  reset(sessionKey: string, options: ResetOptions = {}): SessionInfo {
    return this.db.tx(() => {
      const previous = this.active(sessionKey);
      if (previous) this.close(previous.sessionId);
      const row = this.newRow(
        sessionKey,
        options,
        options.reason ?? "reset",
        options.message ?? null,
        previous?.sessionId ?? null,
      );
      return this.begin(row);
    });
  }

  /**
   * Compaction as a new session: snapshots the current one, ends it, and starts a successor
   * whose log opens with the summary and carries over the kept tail of the current branch.
   */
  compact(
    sessionKey: string,
    options: CompactOptions,
  ): { session: SessionInfo; snapshot: TranscriptSnapshot } {
    return this.db.tx(() => {
      const previous = this.requireActive(sessionKey);
      const kept = this.keptEvents(previous, options.firstKeptEntryId);
      const row = this.newRow(sessionKey, options, "compaction", null, previous.sessionId);
      const snapshot = this.snapshots.create(previous.sessionId, {
        reason: "compaction",
        metadata: { successorSessionId: row.sessionId, tokensBefore: options.tokensBefore ?? null },
      });
      this.close(previous.sessionId);
      this.begin(row);
      const compaction = this.transcripts.append(row.sessionId, {
        type: "compaction",
        parentId: null,
        summary: options.summary,
        ...(options.tokensBefore === undefined ? {} : { tokensBefore: options.tokensBefore }),
        ...(options.details === undefined ? {} : { details: options.details }),
        fromSessionId: previous.sessionId,
      });
      kept.forEach((event, i) => {
        const parentId = i === 0 ? compaction.event.id : event.parentId;
        this.transcripts.append(row.sessionId, { ...event, parentId }, { verbatim: true });
      });
      this.entries.patch(sessionKey, (entry) => ({
        ...entry,
        compactionCount:
          (typeof entry?.compactionCount === "number" ? entry.compactionCount : 0) + 1,
      }));
      return { session: this.get(row.sessionId), snapshot };
    });
  }

  /** Ends the active session of a key without starting another. */
  end(sessionKey: string): SessionInfo | undefined {
    return this.db.tx(() => {
      const current = this.active(sessionKey);
      if (!current) return undefined;
      this.close(current.sessionId);
      return this.get(current.sessionId);
    });
  }

  /** The entry, its active session and that session's context: what a restart needs. */
  restore(sessionKey: string): RestoredSession | undefined {
    const entry = this.entries.get(sessionKey);
    const session = this.active(sessionKey);
    if (!entry || !session) return undefined;
    return { entry, session, context: this.branches.context(session.sessionId) };
  }

  /**
   * Records that a session belongs to a key (creating an empty session row when it has no log
   * yet). A session already attached to a key keeps it; its last activity becomes `at` when that
   * is later. Used when importing a session index, whose entries say when they were last used.
   */
  attachKey(sessionId: string, sessionKey: string, at = Date.now()): SessionInfo {
    this.upsertKey.run(checkSessionId(sessionId), sessionKey, at, at);
    return this.get(sessionId);
  }

  /**
   * Creates a session row with known history (an import), unless it exists: reruns keep the
   * row the first run made.
   */
  importSession(row: {
    sessionId: string;
    sessionKey: string | null;
    createdAt: number;
    endedAt?: number | null;
    resetReason?: string | null;
    resetMessage?: string | null;
    predecessorId?: string | null;
  }): SessionInfo {
    this.insertImported.run(
      checkSessionId(row.sessionId),
      row.sessionKey,
      row.createdAt,
      row.createdAt,
      row.endedAt ?? null,
      row.resetReason ?? null,
      row.resetMessage ?? null,
      row.predecessorId ?? null,
    );
    return this.get(row.sessionId);
  }

  /**
   * Moves a session's start back to `startedAt` (an imported log's header) when it is earlier:
   * an index entry imported first made the row at the entry's last use, not at its start.
   */
  markStarted(sessionId: string, startedAt: number): SessionInfo {
    this.setStarted.run(startedAt, checkSessionId(sessionId));
    return this.get(sessionId);
  }

  /** Marks a session ended at a given time (a soft-deleted transcript), unless it already is. */
  markEnded(sessionId: string, endedAt: number): SessionInfo {
    this.setEnded.run(endedAt, checkSessionId(sessionId));
    return this.get(sessionId);
  }

  /**
   * Deletes a session with its events, identities, snapshots and search rows. A cold session is
   * restored first, in the same transaction, so that every delete trigger (the usage rollups'
   * among them) sees its rows.
   */
  delete(sessionId: string): boolean {
    const removed = this.db.tx(() => {
      this.transcripts.cold.restoreInTx(checkSessionId(sessionId));
      const removed = this.deleteSession.run(sessionId).changes > 0;
      if (removed) this.transcripts.sweepOrphanBlobs();
      return removed;
    });
    // A cold session's archive goes once its rows are gone for good.
    this.transcripts.cold.removeReleasedFiles();
    return removed;
  }

  private requireActive(sessionKey: string): SessionInfo {
    const current = this.active(sessionKey);
    if (!current) {
      throw new StateError("E_NOT_FOUND", `session key ${sessionKey} has no active session`, {
        details: { sessionKey },
      });
    }
    return current;
  }

  private keptEvents(session: SessionInfo, firstKept: string | undefined): TranscriptEvent[] {
    if (firstKept === undefined || session.leafEventId === null) return [];
    const path = this.branches.tree(session.sessionId).pathTo(session.leafEventId);
    const start = path.indexOf(firstKept);
    if (start < 0) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `firstKeptEntryId ${firstKept} is not on the current branch of session ${session.sessionId}`,
        { details: { sessionId: session.sessionId, firstKeptEntryId: firstKept } },
      );
    }
    return path
      .slice(start)
      .map((id) => this.transcripts.get(session.sessionId, id)?.event)
      .filter((event): event is TranscriptEvent => event !== undefined);
  }

  private newRow(
    sessionKey: string,
    options: StartOptions,
    reason: string | null,
    message: string | null,
    predecessorId: string | null,
  ): NewSessionRow {
    const sessionId = checkSessionId(options.sessionId ?? randomUUID());
    return { sessionId, sessionKey, reason, message, predecessorId, cwd: options.cwd };
  }

  /** Inserts the session row and its header, and points the key's entry at it. */
  private begin(row: NewSessionRow): SessionInfo {
    const now = Date.now();
    this.insertSession.run(
      row.sessionId,
      row.sessionKey,
      now,
      now,
      row.reason,
      row.message,
      row.predecessorId,
    );
    const header: TranscriptEvent = {
      type: "session",
      version: TRANSCRIPT_HEADER_VERSION,
      id: row.sessionId,
      timestamp: new Date(now).toISOString(),
      ...(row.cwd === undefined ? {} : { cwd: row.cwd }),
    };
    this.transcripts.append(row.sessionId, header, { verbatim: true });
    this.entries.patch(row.sessionKey, (entry) => ({
      ...entry,
      sessionId: row.sessionId,
      updatedAt: now,
    }));
    return this.get(row.sessionId);
  }

  private close(sessionId: string): void {
    const now = Date.now();
    this.endSession.run(now, now, sessionId);
  }
}
