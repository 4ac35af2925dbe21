import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { checkSessionId } from "../../ids.js";
import type { SessionState } from "../../memory/types.js";
import { type Clock, checkOptions, checkText, optionalTime } from "../checks.js";
import { COMPACTION_LINEAGE, notFound } from "./memory-checks.js";

type SessionStateRow = {
  session_id: string;
  active_topic_id: string | null;
  last_compacted_at: number | null;
  last_turn_id: string | null;
  updated_at: number;
};

export const SESSION_STATE_COLUMNS = columnsOf<SessionStateRow>()(
  "session_id",
  "active_topic_id",
  "last_compacted_at",
  "last_turn_id",
  "updated_at",
);

/** Fields to set; absent ones keep their value, `null` clears one. */
export interface SessionStatePatch {
  /** A topic of the session (or of one it continues through compaction), or null for none. */
  activeTopicId?: string | null;
  lastCompactedAt?: number | null;
  lastTurnId?: string | null;
}

const PATCH_KEYS = ["activeTopicId", "lastCompactedAt", "lastTurnId"];

function fromRow(row: SessionStateRow): SessionState {
  return {
    sessionId: row.session_id,
    activeTopicId: row.active_topic_id,
    lastCompactedAt: row.last_compacted_at,
    lastTurnId: row.last_turn_id,
    updatedAt: row.updated_at,
  };
}

/**
 * Where each session stands (`session_state`): its active topic, last compaction and last turn.
 * One row per session, written as a patch, read on recovery with one primary-key lookup.
 */
export class MemoryStateStore {
  private readonly clock: Clock;
  private readonly selectOne: SqlStatement<SessionStateRow>;
  private readonly selectSession: SqlStatement;
  private readonly selectTopicSession: SqlStatement<{ session_id: string }>;
  private readonly selectNearest: SqlStatement<SessionStateRow>;
  private readonly selectInLineage: SqlStatement;
  private readonly upsertRow: SqlStatement;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "MemoryStateStore").clock ?? Date.now;
    this.selectOne = db.prepare("SELECT * FROM session_state WHERE session_id = ?");
    this.selectSession = db.prepare("SELECT 1 FROM sessions WHERE session_id = ?");
    this.selectTopicSession = db.prepare("SELECT session_id FROM topics WHERE topic_id = ?");
    this.selectNearest = db.prepare(
      `${COMPACTION_LINEAGE} SELECT st.* FROM lineage l
       JOIN session_state st ON st.session_id = l.session_id ORDER BY l.depth LIMIT 1`,
    );
    this.selectInLineage = db.prepare(
      `${COMPACTION_LINEAGE} SELECT 1 FROM lineage WHERE session_id = @topicSession`,
    );
    this.upsertRow = db.prepare(
      `INSERT INTO session_state (${SESSION_STATE_COLUMNS.join(", ")})
       VALUES (${SESSION_STATE_COLUMNS.map((c) => `@${c}`).join(", ")})
       ON CONFLICT (session_id) DO UPDATE SET active_topic_id = excluded.active_topic_id,
         last_compacted_at = excluded.last_compacted_at, last_turn_id = excluded.last_turn_id,
         updated_at = excluded.updated_at`,
    );
  }

  get(sessionId: string): SessionState | undefined {
    const row = this.selectOne.get(checkSessionId(sessionId));
    return row ? fromRow(row) : undefined;
  }

  /**
   * The state of the session, else of the nearest session it continues through compaction (a
   * compacted session resumes where its predecessor stood). Undefined when none has one.
   */
  resolve(sessionId: string): SessionState | undefined {
    const row = this.selectNearest.get({ session: checkSessionId(sessionId) });
    return row ? fromRow(row) : undefined;
  }

  /** True when `sessionId` is `otherSessionId` or continues it through compaction. */
  continues(sessionId: string, otherSessionId: string): boolean {
    const params = { session: checkSessionId(sessionId), topicSession: otherSessionId };
    return this.selectInLineage.get(params) !== undefined;
  }

  /** Sets the given fields, creating the row on first use; `E_NOT_FOUND` for an unknown session. */
  patch(sessionId: string, patch: SessionStatePatch): SessionState {
    checkOptions(patch, PATCH_KEYS, "MemoryStateStore.patch");
    const session = checkSessionId(sessionId);
    return this.db.tx(() => {
      const current = this.selectOne.get(session);
      if (!current && !this.selectSession.get(session)) {
        throw notFound(`session ${session}`, { sessionId: session });
      }
      const row: SessionStateRow = {
        session_id: session,
        active_topic_id: current?.active_topic_id ?? null,
        last_compacted_at: current?.last_compacted_at ?? null,
        last_turn_id: current?.last_turn_id ?? null,
        updated_at: this.clock(),
      };
      if (patch.activeTopicId !== undefined) {
        row.active_topic_id = this.checkTopic(session, patch.activeTopicId);
      }
      if (patch.lastCompactedAt !== undefined) {
        row.last_compacted_at = optionalTime("lastCompactedAt", patch.lastCompactedAt);
      }
      if (patch.lastTurnId !== undefined) {
        row.last_turn_id =
          patch.lastTurnId === null ? null : checkText("lastTurnId", patch.lastTurnId, 200);
      }
      this.upsertRow.run(row);
      return fromRow(row);
    });
  }

  /**
   * The active topic must be the session's own or inherited through compaction: recovery would
   * otherwise resume another conversation's work.
   */
  private checkTopic(sessionId: string, topicId: string | null): string | null {
    if (topicId === null) return null;
    const topic = this.selectTopicSession.get(checkText("activeTopicId", topicId, 200));
    if (!topic) throw notFound(`topic ${topicId}`, { topicId });
    if (!this.continues(sessionId, topic.session_id)) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `topic ${topicId} belongs to session ${topic.session_id}, which session ${sessionId} does not continue`,
        { details: { topicId, sessionId, topicSessionId: topic.session_id } },
      );
    }
    return topicId;
  }
}
