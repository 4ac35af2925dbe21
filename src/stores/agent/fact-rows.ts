import { columnsOf } from "../../db/columns.js";
import { parseSecretRef } from "../../memory/secret-ref.js";
import {
  FACT_CATEGORIES,
  FACT_SENSITIVITIES,
  type FactSensitivity,
  RECALL_POLICIES,
} from "../../memory/taxonomy.js";
import type { Fact, FactSource, FactVersion } from "../../memory/types.js";
import { checkStored, decodeJson } from "../checks.js";

/** Row shapes of the fact tables, checked against the committed schema by a test. */
export type FactRow = {
  id: number;
  fact_id: string;
  scope: string;
  key: string;
  category: string;
  value: string;
  sensitivity: string;
  recall_policy: string;
  confidence: number;
  source_session_id: string | null;
  source_event_id: string | null;
  source_topic_id: string | null;
  version: number;
  created_at: number;
  updated_at: number;
};

export type FactHistoryRow = {
  fact_id: string;
  version: number;
  category: string;
  value: string | null;
  sensitivity: string;
  recall_policy: string;
  confidence: number;
  source_session_id: string | null;
  source_event_id: string | null;
  source_topic_id: string | null;
  valid_from: number;
  replaced_at: number;
};

export type FactTagRow = {
  fact_id: string;
  tag: string;
};

export const FACT_COLUMNS = columnsOf<FactRow>()(
  "id",
  "fact_id",
  "scope",
  "key",
  "category",
  "value",
  "sensitivity",
  "recall_policy",
  "confidence",
  "source_session_id",
  "source_event_id",
  "source_topic_id",
  "version",
  "created_at",
  "updated_at",
);
export const FACT_HISTORY_COLUMNS = columnsOf<FactHistoryRow>()(
  "fact_id",
  "version",
  "category",
  "value",
  "sensitivity",
  "recall_policy",
  "confidence",
  "source_session_id",
  "source_event_id",
  "source_topic_id",
  "valid_from",
  "replaced_at",
);
export const FACT_TAG_COLUMNS = columnsOf<FactTagRow>()("fact_id", "tag");

/** A fact row with its tags, as the store's SELECTs return it. */
export type TaggedFactRow = FactRow & { tags_json: string };

/** Every fact read selects its tags in the same statement: one query per list, not one per fact. */
export const SELECT_TAGGED_FACT = `SELECT f.*,
  (SELECT json_group_array(t.tag) FROM fact_tags t WHERE t.fact_id = f.fact_id) AS tags_json
  FROM facts f`;

function sourceOf(sessionId: string | null, eventId: string | null): FactSource | null {
  return sessionId === null || eventId === null ? null : { sessionId, eventId };
}

/**
 * A secret_ref's stored value is exposed only as a reference, and only when it parses as one:
 * a row written by hand or by older code could hold the secret itself.
 */
function valueAndReference(
  sensitivity: FactSensitivity,
  value: string | null,
): { value: string | null; reference: string | null } {
  if (sensitivity !== "secret_ref") return { value, reference: null };
  return { value: null, reference: value === null ? null : parseSecretRef(value) };
}

/** The columns a fact and each of its past versions share (see CONTENT in fact-store.ts). */
type FactContentRow = Pick<
  FactHistoryRow,
  | "category"
  | "value"
  | "sensitivity"
  | "recall_policy"
  | "confidence"
  | "source_session_id"
  | "source_event_id"
  | "source_topic_id"
>;

function contentFromRow(what: string, row: FactContentRow) {
  const sensitivity = checkStored(`${what} sensitivity`, row.sensitivity, FACT_SENSITIVITIES);
  return {
    category: checkStored(`${what} category`, row.category, FACT_CATEGORIES),
    ...valueAndReference(sensitivity, row.value),
    sensitivity,
    recallPolicy: checkStored(`${what} recall policy`, row.recall_policy, RECALL_POLICIES),
    confidence: row.confidence,
    source: sourceOf(row.source_session_id, row.source_event_id),
    sourceTopicId: row.source_topic_id,
  };
}

export function factFromRow(row: TaggedFactRow): Fact {
  const what = `fact ${row.scope}/${row.key}`;
  return {
    factId: row.fact_id,
    scope: row.scope,
    key: row.key,
    ...contentFromRow(what, row),
    tags: decodeJson<string[]>(`${what} tags`, row.tags_json),
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function factVersionFromRow(row: FactHistoryRow): FactVersion {
  return {
    factId: row.fact_id,
    version: row.version,
    ...contentFromRow(`fact ${row.fact_id} version ${row.version}`, row),
    validFrom: row.valid_from,
    replacedAt: row.replaced_at,
  };
}

/** What the full-text index holds for a fact: never a secret_ref's value. */
export function searchTextOf(row: FactRow, tags: readonly string[]): string {
  const value = row.sensitivity === "secret_ref" ? "" : row.value;
  return [row.key, row.category, ...tags, value].join(" ");
}
