import { randomUUID } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { checkSessionId } from "../../ids.js";
import { checkEnum, TOPIC_STATUSES } from "../../memory/taxonomy.js";
import type { Topic, TopicMember } from "../../memory/types.js";
import { type Clock, checkLimit, checkOptions, checkText } from "../checks.js";
import { COMPACTION_LINEAGE, checkBody, checkUnit, notFound } from "./memory-checks.js";
import {
  contentColumns,
  MAX_TOPIC_TITLE,
  type MembershipRow,
  memberFromRow,
  NEW_TOPIC_KEYS,
  type NewTopic,
  type NewTopicMember,
  TOPIC_COLUMNS,
  TOPIC_MEMBERSHIP_COLUMNS,
  TOPIC_PATCH_KEYS,
  type TopicListOptions,
  type TopicPatch,
  type TopicRow,
  topicFromRow,
} from "./topic-rows.js";

const MAX_REASON_LENGTH = 1024;
// A parent chain longer than this is a cycle or a mistake; walking it is bounded either way.
const MAX_TOPIC_DEPTH = 256;

/**
 * Topics of a session's conversation (`topics`) and the transcript events that belong to them
 * (`topic_membership`). A membership names an event by `{sessionId, eventId}`; the schema refuses
 * one whose event does not exist and drops it with its session.
 */
export class TopicStore {
  private readonly clock: Clock;
  private readonly selectSession: SqlStatement;
  private readonly selectEvent: SqlStatement;
  private readonly insertRow: SqlStatement;
  private readonly updateRow: SqlStatement;
  private readonly selectOne: SqlStatement<TopicRow>;
  private readonly selectParent: SqlStatement<{ parent_topic_id: string | null }>;
  private readonly bySession: SqlStatement<TopicRow>;
  private readonly recent: SqlStatement<TopicRow>;
  private readonly byLineage: SqlStatement<TopicRow>;
  private readonly deleteOne: SqlStatement;
  private readonly activateRow: SqlStatement;
  private readonly demotePrimary: SqlStatement;
  private readonly upsertMember: SqlStatement<MembershipRow>;
  private readonly deleteMember: SqlStatement;
  private readonly membersOf: SqlStatement<MembershipRow>;
  private readonly topicsOfEvent: SqlStatement<MembershipRow>;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "TopicStore").clock ?? Date.now;
    this.selectSession = db.prepare("SELECT 1 FROM sessions WHERE session_id = ?");
    this.selectEvent = db.prepare(
      `SELECT 1 FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?) AND event_id = ?`,
    );
    this.insertRow = db.prepare(
      `INSERT INTO topics (${TOPIC_COLUMNS.join(", ")})
       VALUES (${TOPIC_COLUMNS.map((c) => `@${c}`).join(", ")})`,
    );
    const updates = TOPIC_COLUMNS.slice(2, -3)
      .map((c) => `${c} = @${c}`)
      .join(", ");
    this.updateRow = db.prepare(
      `UPDATE topics SET ${updates}, updated_at = @updated_at WHERE topic_id = @topic_id`,
    );
    this.selectOne = db.prepare("SELECT * FROM topics WHERE topic_id = ?");
    this.selectParent = db.prepare("SELECT parent_topic_id FROM topics WHERE topic_id = ?");
    this.bySession = db.prepare(
      `SELECT * FROM topics WHERE session_id = @session AND (@status IS NULL OR status = @status)
       ORDER BY last_active_at DESC, rowid DESC LIMIT @limit`,
    );
    this.recent = db.prepare(
      `SELECT * FROM topics WHERE (@status IS NULL OR status = @status)
       ORDER BY last_active_at DESC, rowid DESC LIMIT @limit`,
    );
    this.byLineage = db.prepare(
      `${COMPACTION_LINEAGE} SELECT t.* FROM lineage l JOIN topics t ON t.session_id = l.session_id
       WHERE (@status IS NULL OR t.status = @status)
       ORDER BY t.last_active_at DESC, t.rowid DESC LIMIT @limit`,
    );
    this.deleteOne = db.prepare("DELETE FROM topics WHERE topic_id = ?");
    this.activateRow = db.prepare(
      `UPDATE topics SET status = 'open', last_active_at = max(last_active_at, ?),
         updated_at = max(updated_at, ?) WHERE topic_id = ?`,
    );
    this.demotePrimary = db.prepare(
      `UPDATE topic_membership SET is_primary = 0
       WHERE session_id = ? AND event_id = ? AND is_primary = 1 AND topic_id <> ?`,
    );
    this.upsertMember = db.prepare(
      `INSERT INTO topic_membership (${TOPIC_MEMBERSHIP_COLUMNS.join(", ")})
       VALUES (${TOPIC_MEMBERSHIP_COLUMNS.map((c) => `@${c}`).join(", ")})
       ON CONFLICT (session_id, event_id, topic_id) DO UPDATE SET score = excluded.score,
         is_primary = excluded.is_primary, reason = excluded.reason
       RETURNING *`,
    );
    this.deleteMember = db.prepare(
      "DELETE FROM topic_membership WHERE session_id = ? AND event_id = ? AND topic_id = ?",
    );
    this.membersOf = db.prepare(
      `SELECT m.* FROM topic_membership m
         JOIN sessions s ON s.session_id = m.session_id
         JOIN transcript_events e ON e.session_no = s.session_no AND e.event_id = m.event_id
       WHERE m.session_id = ? AND m.topic_id = ? ORDER BY e.seq LIMIT ?`,
    );
    this.topicsOfEvent = db.prepare(
      `SELECT * FROM topic_membership WHERE session_id = ? AND event_id = ?
       ORDER BY is_primary DESC, score DESC, topic_id`,
    );
  }

  /** Starts a topic in a session; `E_NOT_FOUND` when the session or the parent topic is missing. */
  create(sessionId: string, input: NewTopic): Topic {
    checkOptions(input, NEW_TOPIC_KEYS, "TopicStore.create");
    const session = checkSessionId(sessionId);
    const topicId = checkText("topicId", input.topicId ?? randomUUID(), 200);
    const now = this.clock();
    const row: TopicRow = {
      topic_id: topicId,
      session_id: session,
      status: "open",
      parent_topic_id: null,
      summary_short: "",
      summary_long: "",
      open_loops_json: "[]",
      labels_json: "[]",
      created_at: now,
      updated_at: now,
      last_active_at: now,
      ...contentColumns(input),
      title: checkText("topic title", input.title, MAX_TOPIC_TITLE),
    };
    return this.db.tx(() => {
      if (!this.selectSession.get(session)) {
        throw notFound(`session ${session}`, { sessionId: session });
      }
      if (this.selectOne.get(topicId)) {
        throw new StateError("E_CONFLICT", `topic ${topicId} already exists`, {
          details: { topicId },
        });
      }
      row.parent_topic_id = this.checkParent(topicId, input.parentTopicId);
      this.insertRow.run(row);
      return topicFromRow(row);
    });
  }

  /** Changes the given fields; `E_NOT_FOUND` for an unknown topic. */
  update(topicId: string, patch: TopicPatch): Topic {
    checkOptions(patch, TOPIC_PATCH_KEYS, "TopicStore.update");
    const content = contentColumns(patch);
    return this.db.tx(() => {
      const current = this.selectOne.get(checkText("topicId", topicId, 200));
      if (!current) throw notFound(`topic ${topicId}`, { topicId });
      const next: TopicRow = { ...current, ...content, updated_at: this.clock() };
      if (patch.parentTopicId !== undefined) {
        next.parent_topic_id = this.checkParent(topicId, patch.parentTopicId);
      }
      this.updateRow.run(next);
      return topicFromRow(next);
    });
  }

  get(topicId: string): Topic | undefined {
    const row = this.selectOne.get(checkText("topicId", topicId, 200));
    return row ? topicFromRow(row) : undefined;
  }

  /** `get`, or `E_NOT_FOUND`. */
  require(topicId: string): Topic {
    const topic = this.get(topicId);
    if (!topic) throw notFound(`topic ${topicId}`, { topicId });
    return topic;
  }

  /** A session's topics, most recently active first. */
  list(sessionId: string, options: TopicListOptions = {}): Topic[] {
    const { status, limit } = checkOptions(options, ["status", "limit"], "TopicStore.list");
    return this.bySession
      .all({
        session: checkSessionId(sessionId),
        status: status === undefined ? null : checkEnum("status", status, TOPIC_STATUSES),
        limit: checkLimit(limit),
      })
      .map(topicFromRow);
  }

  /** `list`, plus the topics of the sessions this one continues through compaction. */
  listLineage(sessionId: string, options: TopicListOptions = {}): Topic[] {
    const { status, limit } = checkOptions(options, ["status", "limit"], "TopicStore.listLineage");
    return this.byLineage
      .all({
        session: checkSessionId(sessionId),
        status: status === undefined ? null : checkEnum("status", status, TOPIC_STATUSES),
        limit: checkLimit(limit),
      })
      .map(topicFromRow);
  }

  /** Topics of every session of the agent, most recently active first. */
  listRecent(options: TopicListOptions = {}): Topic[] {
    const { status, limit } = checkOptions(options, ["status", "limit"], "TopicStore.listRecent");
    return this.recent
      .all({
        status: status === undefined ? null : checkEnum("status", status, TOPIC_STATUSES),
        limit: checkLimit(limit),
      })
      .map(topicFromRow);
  }

  /** Marks a topic open and active now (a switch to it). */
  activate(topicId: string): Topic {
    const now = this.clock();
    if (this.activateRow.run(now, now, checkText("topicId", topicId, 200)).changes === 0) {
      throw notFound(`topic ${topicId}`, { topicId });
    }
    return this.require(topicId);
  }

  /** Deletes a topic with its memberships; child topics are detached, not deleted. */
  delete(topicId: string): boolean {
    return this.deleteOne.run(checkText("topicId", topicId, 200)).changes > 0;
  }

  /** Links an event of the topic's session to the topic (again: updates score, primary, reason). */
  link(topicId: string, member: NewTopicMember): TopicMember {
    checkOptions(member, ["eventId", "score", "isPrimary", "reason"], "TopicStore.link");
    const eventId = checkText("eventId", member.eventId, 200);
    const score = checkUnit("membership score", member.score ?? 1);
    const reason =
      member.reason === undefined || member.reason === null
        ? null
        : checkBody("membership reason", member.reason, MAX_REASON_LENGTH);
    return this.db.tx(() => {
      const topic = this.require(topicId);
      if (!this.selectEvent.get(topic.sessionId, eventId)) {
        throw notFound(`event ${eventId} in session ${topic.sessionId}`, {
          sessionId: topic.sessionId,
          eventId,
        });
      }
      if (member.isPrimary === true) this.demotePrimary.run(topic.sessionId, eventId, topicId);
      const row = this.upsertMember.get({
        session_id: topic.sessionId,
        event_id: eventId,
        topic_id: topicId,
        score,
        is_primary: member.isPrimary === true ? 1 : 0,
        reason,
        created_at: this.clock(),
      });
      return memberFromRow(row as MembershipRow);
    });
  }

  unlink(topicId: string, eventId: string): boolean {
    const topic = this.get(topicId);
    if (!topic) return false;
    return this.deleteMember.run(topic.sessionId, eventId, topicId).changes > 0;
  }

  /** The events linked to a topic, in transcript order. */
  members(topicId: string, options: { limit?: number } = {}): TopicMember[] {
    const { limit } = checkOptions(options, ["limit"], "TopicStore.members");
    const topic = this.require(topicId);
    return this.membersOf.all(topic.sessionId, topicId, checkLimit(limit)).map(memberFromRow);
  }

  /** The topics an event belongs to, its primary topic first. */
  topicsOf(sessionId: string, eventId: string): TopicMember[] {
    return this.topicsOfEvent.all(checkSessionId(sessionId), eventId).map(memberFromRow);
  }

  /** The parent to store: it must exist and must not be the topic or one of its descendants. */
  private checkParent(topicId: string, parentTopicId: string | null | undefined): string | null {
    if (parentTopicId === undefined || parentTopicId === null) return null;
    let cursor: string | null = checkText("parentTopicId", parentTopicId, 200);
    for (let depth = 0; cursor !== null; depth++) {
      if (cursor === topicId || depth > MAX_TOPIC_DEPTH) {
        throw new StateError(
          "E_INVALID_ARGUMENT",
          `topic ${topicId} cannot have ${parentTopicId} as parent: that would make a cycle`,
          { details: { topicId, parentTopicId } },
        );
      }
      const row = this.selectParent.get(cursor);
      if (!row) throw notFound(`parent topic ${cursor}`, { topicId: cursor });
      cursor = row.parent_topic_id;
    }
    return parentTopicId;
  }
}
