import { randomUUID } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { checkSessionId } from "../../ids.js";
import type { ContextSnapshot } from "../../memory/types.js";
import { type Clock, checkLimit, checkOptions, checkText } from "../checks.js";
import { checkBody, notFound } from "./memory-checks.js";

export const MAX_CONTEXT_SNAPSHOT_BYTES = 1024 * 1024;
const MAX_KIND_LENGTH = 64;

type ContextSnapshotRow = {
  snapshot_id: string;
  session_id: string;
  topic_id: string | null;
  kind: string;
  content: string;
  created_at: number;
};

export const CONTEXT_SNAPSHOT_COLUMNS = columnsOf<ContextSnapshotRow>()(
  "snapshot_id",
  "session_id",
  "topic_id",
  "kind",
  "content",
  "created_at",
);

export interface NewContextSnapshot {
  /** What the text is for: "summary", "system-prompt", "handoff" …. */
  kind: string;
  content: string;
  /** A topic of the session; absent or null: the snapshot is the session's. */
  topicId?: string | null;
  /** Default: a new UUID. */
  snapshotId?: string;
}

export interface ContextSnapshotQuery {
  kind: string;
  /** A topic's snapshots; absent or null: the session's own. */
  topicId?: string | null;
}

export interface ContextSnapshotListOptions {
  kind?: string;
  /** A topic's snapshots; null: only the session's own; absent: all. */
  topicId?: string | null;
  /** Default 100. */
  limit?: number;
}

function fromRow(row: ContextSnapshotRow): ContextSnapshot {
  return {
    snapshotId: row.snapshot_id,
    sessionId: row.session_id,
    topicId: row.topic_id,
    kind: row.kind,
    content: row.content,
    createdAt: row.created_at,
  };
}

const checkKind = (kind: unknown) => checkText("context snapshot kind", kind, MAX_KIND_LENGTH);
const topicParam = (topicId: unknown) =>
  topicId === undefined || topicId === null ? null : checkText("topicId", topicId, 200);

/**
 * Prompt-ready text kept for reuse (`context_snapshots`): per session, optional topic and kind,
 * newest wins. Snapshots go with their session and their topic.
 */
export class ContextSnapshotStore {
  private readonly clock: Clock;
  private readonly selectSession: SqlStatement;
  private readonly selectTopicSession: SqlStatement<{ session_id: string }>;
  private readonly insertRow: SqlStatement;
  private readonly selectLatest: SqlStatement<ContextSnapshotRow>;
  private readonly selectOne: SqlStatement<ContextSnapshotRow>;
  private readonly listRows: SqlStatement<ContextSnapshotRow>;
  private readonly deleteOne: SqlStatement;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "ContextSnapshotStore").clock ?? Date.now;
    this.selectSession = db.prepare("SELECT 1 FROM sessions WHERE session_id = ?");
    this.selectTopicSession = db.prepare("SELECT session_id FROM topics WHERE topic_id = ?");
    this.insertRow = db.prepare(
      `INSERT INTO context_snapshots (${CONTEXT_SNAPSHOT_COLUMNS.join(", ")})
       VALUES (${CONTEXT_SNAPSHOT_COLUMNS.map((c) => `@${c}`).join(", ")})`,
    );
    // `IS` matches a NULL topic as well as a topic id, and still walks the index.
    this.selectLatest = db.prepare(
      `SELECT * FROM context_snapshots WHERE session_id = ? AND topic_id IS ? AND kind = ?
       ORDER BY created_at DESC, rowid DESC LIMIT 1`,
    );
    this.selectOne = db.prepare("SELECT * FROM context_snapshots WHERE snapshot_id = ?");
    this.listRows = db.prepare(
      `SELECT * FROM context_snapshots WHERE session_id = @session
         AND (@anyTopic = 1 OR topic_id IS @topic) AND (@kind IS NULL OR kind = @kind)
       ORDER BY created_at DESC, rowid DESC LIMIT @limit`,
    );
    this.deleteOne = db.prepare("DELETE FROM context_snapshots WHERE snapshot_id = ?");
  }

  /** Stores a snapshot; `E_NOT_FOUND` for an unknown session or topic. */
  put(sessionId: string, input: NewContextSnapshot): ContextSnapshot {
    checkOptions(input, ["kind", "content", "topicId", "snapshotId"], "ContextSnapshotStore.put");
    const session = checkSessionId(sessionId);
    const content = checkBody("context snapshot content", input.content, Number.MAX_SAFE_INTEGER);
    const bytes = Buffer.byteLength(content);
    if (bytes > MAX_CONTEXT_SNAPSHOT_BYTES) {
      throw new StateError(
        "E_TOO_LARGE",
        `context snapshot is ${bytes} bytes; the limit is ${MAX_CONTEXT_SNAPSHOT_BYTES}`,
        { details: { bytes, limit: MAX_CONTEXT_SNAPSHOT_BYTES } },
      );
    }
    const row: ContextSnapshotRow = {
      snapshot_id: checkText("snapshotId", input.snapshotId ?? randomUUID(), 200),
      session_id: session,
      topic_id: topicParam(input.topicId),
      kind: checkKind(input.kind),
      content,
      created_at: this.clock(),
    };
    return this.db.tx(() => {
      if (!this.selectSession.get(session)) throw notFound(`session ${session}`, { sessionId });
      if (row.topic_id !== null) this.checkTopic(session, row.topic_id);
      this.insertRow.run(row);
      return fromRow(row);
    });
  }

  /** The newest snapshot of a kind for the session (or one of its topics). */
  latest(sessionId: string, query: ContextSnapshotQuery): ContextSnapshot | undefined {
    checkOptions(query, ["kind", "topicId"], "ContextSnapshotStore.latest");
    const row = this.selectLatest.get(
      checkSessionId(sessionId),
      topicParam(query.topicId),
      checkKind(query.kind),
    );
    return row ? fromRow(row) : undefined;
  }

  get(snapshotId: string): ContextSnapshot | undefined {
    const row = this.selectOne.get(checkText("snapshotId", snapshotId, 200));
    return row ? fromRow(row) : undefined;
  }

  /** A session's snapshots, newest first. */
  list(sessionId: string, options: ContextSnapshotListOptions = {}): ContextSnapshot[] {
    const o = checkOptions(options, ["kind", "topicId", "limit"], "ContextSnapshotStore.list");
    return this.listRows
      .all({
        session: checkSessionId(sessionId),
        anyTopic: o.topicId === undefined ? 1 : 0,
        topic: topicParam(o.topicId),
        kind: o.kind === undefined ? null : checkKind(o.kind),
        limit: checkLimit(o.limit),
      })
      .map(fromRow);
  }

  delete(snapshotId: string): boolean {
    return this.deleteOne.run(checkText("snapshotId", snapshotId, 200)).changes > 0;
  }

  private checkTopic(sessionId: string, topicId: string): void {
    const topic = this.selectTopicSession.get(topicId);
    if (!topic) throw notFound(`topic ${topicId}`, { topicId });
    if (topic.session_id !== sessionId) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `topic ${topicId} belongs to session ${topic.session_id}, not ${sessionId}`,
        { details: { topicId, sessionId, topicSessionId: topic.session_id } },
      );
    }
  }
}
