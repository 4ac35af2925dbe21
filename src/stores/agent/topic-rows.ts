import { columnsOf } from "../../db/columns.js";
import {
  checkEnum,
  normalizeLabels,
  TOPIC_STATUSES,
  type TopicStatus,
} from "../../memory/taxonomy.js";
import type { Topic, TopicMember } from "../../memory/types.js";
import { checkStored, checkText, decodeJson } from "../checks.js";
import { checkBody, checkLines } from "./memory-checks.js";

// Row shapes of the topic tables (checked against the committed schema by a test), the inputs
// of TopicStore and their validation.

export const MAX_TOPIC_TITLE = 512;
export const MAX_TOPIC_SUMMARY_SHORT = 4 * 1024;
export const MAX_TOPIC_SUMMARY_LONG = 64 * 1024;
export const MAX_OPEN_LOOPS = 100;
const MAX_LOOP_LENGTH = 2048;

export type TopicRow = {
  topic_id: string;
  session_id: string;
  title: string;
  status: string;
  parent_topic_id: string | null;
  summary_short: string;
  summary_long: string;
  open_loops_json: string;
  labels_json: string;
  created_at: number;
  updated_at: number;
  last_active_at: number;
};

export type MembershipRow = {
  session_id: string;
  event_id: string;
  topic_id: string;
  score: number;
  is_primary: number;
  reason: string | null;
  created_at: number;
};

export const TOPIC_COLUMNS = columnsOf<TopicRow>()(
  "topic_id",
  "session_id",
  "title",
  "status",
  "parent_topic_id",
  "summary_short",
  "summary_long",
  "open_loops_json",
  "labels_json",
  "created_at",
  "updated_at",
  "last_active_at",
);
export const TOPIC_MEMBERSHIP_COLUMNS = columnsOf<MembershipRow>()(
  "session_id",
  "event_id",
  "topic_id",
  "score",
  "is_primary",
  "reason",
  "created_at",
);

export interface NewTopic {
  /** Default: a new UUID. */
  topicId?: string;
  title: string;
  /** Default "open". */
  status?: TopicStatus;
  parentTopicId?: string | null;
  summaryShort?: string;
  summaryLong?: string;
  openLoops?: string[];
  labels?: string[];
}

/** Fields to change; absent fields stay as they are. `parentTopicId: null` detaches. */
export interface TopicPatch {
  title?: string;
  status?: TopicStatus;
  parentTopicId?: string | null;
  summaryShort?: string;
  summaryLong?: string;
  openLoops?: string[];
  labels?: string[];
}

export interface NewTopicMember {
  /** An event of the topic's session. */
  eventId: string;
  /** 0 to 1, default 1. */
  score?: number;
  /** Make this the event's primary topic (another primary topic of the event is demoted). */
  isPrimary?: boolean;
  reason?: string | null;
}

export interface TopicListOptions {
  status?: TopicStatus;
  /** Default 100. */
  limit?: number;
}

export const NEW_TOPIC_KEYS = [
  "topicId",
  "title",
  "status",
  "parentTopicId",
  "summaryShort",
  "summaryLong",
  "openLoops",
  "labels",
];
export const TOPIC_PATCH_KEYS = NEW_TOPIC_KEYS.filter((key) => key !== "topicId");

export function topicFromRow(row: TopicRow): Topic {
  const what = `topic ${row.topic_id}`;
  return {
    topicId: row.topic_id,
    sessionId: row.session_id,
    title: row.title,
    status: checkStored(`${what} status`, row.status, TOPIC_STATUSES),
    parentTopicId: row.parent_topic_id,
    summaryShort: row.summary_short,
    summaryLong: row.summary_long,
    openLoops: decodeJson<string[]>(`${what} open loops`, row.open_loops_json),
    labels: decodeJson<string[]>(`${what} labels`, row.labels_json),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastActiveAt: row.last_active_at,
  };
}

export function memberFromRow(row: MembershipRow): TopicMember {
  return {
    sessionId: row.session_id,
    eventId: row.event_id,
    topicId: row.topic_id,
    score: row.score,
    isPrimary: row.is_primary === 1,
    reason: row.reason,
    createdAt: row.created_at,
  };
}

/** The row columns a topic's content maps to, validated; absent fields are left out. */
export function contentColumns(input: TopicPatch): Partial<TopicRow> {
  const out: Partial<TopicRow> = {};
  if (input.title !== undefined) out.title = checkText("topic title", input.title, MAX_TOPIC_TITLE);
  if (input.status !== undefined)
    out.status = checkEnum("topic status", input.status, TOPIC_STATUSES);
  if (input.summaryShort !== undefined) {
    out.summary_short = checkBody("summaryShort", input.summaryShort, MAX_TOPIC_SUMMARY_SHORT);
  }
  if (input.summaryLong !== undefined) {
    out.summary_long = checkBody("summaryLong", input.summaryLong, MAX_TOPIC_SUMMARY_LONG);
  }
  if (input.openLoops !== undefined) {
    const loops = checkLines("openLoops", input.openLoops, MAX_OPEN_LOOPS, MAX_LOOP_LENGTH);
    out.open_loops_json = JSON.stringify(loops);
  }
  if (input.labels !== undefined) {
    out.labels_json = JSON.stringify(normalizeLabels("topic labels", input.labels));
  }
  return out;
}
