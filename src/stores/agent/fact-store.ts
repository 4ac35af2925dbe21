import { randomUUID } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { checkSessionId } from "../../ids.js";
import { checkSecretRef } from "../../memory/secret-ref.js";
import {
  checkEnum,
  FACT_CATEGORIES,
  FACT_SENSITIVITIES,
  type FactCategory,
  type FactSensitivity,
  normalizeLabels,
  RECALL_POLICIES,
  type RecallPolicy,
} from "../../memory/taxonomy.js";
import type { Fact, FactSource, FactVersion } from "../../memory/types.js";
import { searchTerms } from "../../transcript/fts-query.js";
import { type Clock, checkLimit, checkOptions, checkText } from "../checks.js";
import {
  FACT_COLUMNS,
  type FactHistoryRow,
  type FactRow,
  factFromRow,
  factVersionFromRow,
  SELECT_TAGGED_FACT,
  searchTextOf,
  type TaggedFactRow,
} from "./fact-rows.js";
import { checkBody, checkUnit, notFound } from "./memory-checks.js";

export const MAX_FACT_SCOPE = 256;
export const MAX_FACT_KEY = 256;
export const MAX_FACT_VALUE = 64 * 1024;

/**
 * A fact to write under `(scope, key)`. On an existing fact, optional fields left out keep their
 * current values; on a new one they take the defaults noted.
 */
export interface NewFact {
  /** Whose fact it is: "user", "agent", "project:openclaw" …; free text. */
  scope: string;
  key: string;
  category: FactCategory;
  /** For a secret_ref: where the secret lives (env:NAME, keychain:…), never the secret. */
  value: string;
  /** Default "normal". */
  sensitivity?: FactSensitivity;
  /** Default "on_demand". */
  recallPolicy?: RecallPolicy;
  /** 0 to 1, default 1. */
  confidence?: number;
  source?: FactSource | null;
  sourceTopicId?: string | null;
  tags?: string[];
}

export interface FactListOptions {
  scope?: string;
  category?: FactCategory;
  sensitivity?: FactSensitivity;
  recallPolicy?: RecallPolicy;
  /** Default 100. */
  limit?: number;
}

/** Filters shared by the recall reads: only these scopes (default: every scope). */
export interface FactScopeFilter {
  scopes?: readonly string[];
}

const NEW_FACT_KEYS = [
  "scope",
  "key",
  "category",
  "value",
  "sensitivity",
  "recallPolicy",
  "confidence",
  "source",
  "sourceTopicId",
  "tags",
];
const LIST_KEYS = ["scope", "category", "sensitivity", "recallPolicy", "limit"];
// Columns whose change makes a new version (and a history row); tags and times do not.
const CONTENT = [
  "category",
  "value",
  "sensitivity",
  "recall_policy",
  "confidence",
  "source_session_id",
  "source_event_id",
  "source_topic_id",
] as const;
const SCOPES_CLAUSE = "(@scopes IS NULL OR f.scope IN (SELECT value FROM json_each(@scopes)))";

function scopesParam(filter: FactScopeFilter): string | null {
  if (filter.scopes === undefined) return null;
  if (!Array.isArray(filter.scopes)) throw new TypeError("Expected scopes to be an array");
  return JSON.stringify(filter.scopes.map((s) => checkText("fact scope", s, MAX_FACT_SCOPE)));
}

/**
 * Facts (`facts`), their earlier versions (`fact_history`), tags (`fact_tags`) and full-text
 * index (`facts_fts`). One fact per `(scope, key)`: an upsert that changes its content keeps the
 * replaced version in history. A secret_ref fact's value must be a reference, and reads hand it
 * out only as `reference`.
 */
export class FactStore {
  private readonly clock: Clock;
  private readonly selectEvent: SqlStatement;
  private readonly selectTopic: SqlStatement;
  private readonly selectByKey: SqlStatement<TaggedFactRow>;
  private readonly selectById: SqlStatement<TaggedFactRow>;
  private readonly insertRow: SqlStatement<{ id: number }>;
  private readonly updateRow: SqlStatement;
  private readonly insertHistory: SqlStatement;
  private readonly scrubHistory: SqlStatement;
  private readonly selectHistory: SqlStatement<FactHistoryRow>;
  private readonly deleteTags: SqlStatement;
  private readonly insertTag: SqlStatement;
  private readonly deleteText: SqlStatement;
  private readonly insertText: SqlStatement;
  private readonly deleteOne: SqlStatement;
  private readonly listRows: SqlStatement<TaggedFactRow>;
  private readonly alwaysRows: SqlStatement<TaggedFactRow>;
  private readonly topicRows: SqlStatement<TaggedFactRow>;
  private readonly matchRows: SqlStatement<TaggedFactRow>;

  constructor(
    private readonly db: Database,
    options: { clock?: Clock } = {},
  ) {
    this.clock = checkOptions(options, ["clock"], "FactStore").clock ?? Date.now;
    this.selectEvent = db.prepare(
      `SELECT 1 FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?) AND event_id = ?`,
    );
    this.selectTopic = db.prepare("SELECT 1 FROM topics WHERE topic_id = ?");
    this.selectByKey = db.prepare(`${SELECT_TAGGED_FACT} WHERE f.scope = ? AND f.key = ?`);
    this.selectById = db.prepare(`${SELECT_TAGGED_FACT} WHERE f.fact_id = ?`);
    const columns = FACT_COLUMNS.slice(1);
    this.insertRow = db.prepare(
      `INSERT INTO facts (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})
       RETURNING id`,
    );
    this.updateRow = db.prepare(
      `UPDATE facts SET ${CONTENT.map((c) => `${c} = @${c}`).join(", ")},
         version = @version, updated_at = @updated_at WHERE id = @id`,
    );
    this.insertHistory = db.prepare(
      `INSERT INTO fact_history (fact_id, version, ${CONTENT.join(", ")}, valid_from, replaced_at)
       VALUES (@fact_id, @version, ${CONTENT.map((c) => `@${c}`).join(", ")}, @valid_from, @replaced_at)`,
    );
    this.scrubHistory = db.prepare(
      "UPDATE fact_history SET value = NULL WHERE fact_id = ? AND sensitivity <> 'secret_ref'",
    );
    this.selectHistory = db.prepare(
      "SELECT * FROM fact_history WHERE fact_id = ? ORDER BY version DESC",
    );
    this.deleteTags = db.prepare("DELETE FROM fact_tags WHERE fact_id = ?");
    this.insertTag = db.prepare("INSERT OR IGNORE INTO fact_tags (fact_id, tag) VALUES (?, ?)");
    this.deleteText = db.prepare("DELETE FROM facts_fts WHERE rowid = ?");
    this.insertText = db.prepare("INSERT INTO facts_fts (rowid, text) VALUES (?, ?)");
    this.deleteOne = db.prepare("DELETE FROM facts WHERE scope = ? AND key = ?");
    this.listRows = db.prepare(
      `${SELECT_TAGGED_FACT} WHERE (@scope IS NULL OR f.scope = @scope)
         AND (@category IS NULL OR f.category = @category)
         AND (@sensitivity IS NULL OR f.sensitivity = @sensitivity)
         AND (@policy IS NULL OR f.recall_policy = @policy)
       ORDER BY f.scope, f.key LIMIT @limit`,
    );
    this.alwaysRows = db.prepare(
      `${SELECT_TAGGED_FACT} WHERE f.recall_policy = 'always' AND ${SCOPES_CLAUSE}
       ORDER BY f.scope, f.key LIMIT @limit`,
    );
    this.topicRows = db.prepare(
      `${SELECT_TAGGED_FACT} WHERE f.recall_policy = 'topic_bound' AND ${SCOPES_CLAUSE}
         AND f.fact_id IN (
           SELECT t.fact_id FROM fact_tags t WHERE t.tag IN (SELECT value FROM json_each(@labels))
           UNION SELECT s.fact_id FROM facts s WHERE s.source_topic_id = @topic)
       ORDER BY f.scope, f.key LIMIT @limit`,
    );
    this.matchRows = db.prepare(
      `${SELECT_TAGGED_FACT} JOIN facts_fts ON facts_fts.rowid = f.id
       WHERE facts_fts MATCH @match AND f.recall_policy <> 'always' AND ${SCOPES_CLAUSE}
       ORDER BY bm25(facts_fts) LIMIT @limit`,
    );
  }

  /**
   * Creates or changes the fact at `(scope, key)`. A change of content bumps `version` and keeps
   * the replaced version in history; when a fact becomes a secret_ref, the plain values it held
   * before are erased from its history.
   */
  upsert(input: NewFact): Fact {
    checkOptions(input, NEW_FACT_KEYS, "FactStore.upsert");
    const scope = checkText("fact scope", input.scope, MAX_FACT_SCOPE);
    const key = checkText("fact key", input.key, MAX_FACT_KEY);
    const tags = input.tags === undefined ? undefined : normalizeLabels("fact tags", input.tags);
    return this.db.tx(() => {
      const current = this.selectByKey.get(scope, key);
      const next = this.nextRow(input, current, scope, key);
      if (!current) {
        next.id = (this.insertRow.get(next) as { id: number }).id;
      } else if (CONTENT.some((column) => current[column] !== next[column])) {
        this.insertHistory.run({
          ...current,
          valid_from: current.updated_at,
          replaced_at: next.updated_at,
        });
        if (next.sensitivity === "secret_ref") this.scrubHistory.run(current.fact_id);
        next.version = current.version + 1;
        this.updateRow.run(next);
      } else if (tags === undefined) {
        return factFromRow(current);
      }
      if (tags !== undefined) this.replaceTags(next.fact_id, tags);
      const finalTags = tags ?? (current ? (JSON.parse(current.tags_json) as string[]) : []);
      this.deleteText.run(next.id);
      this.insertText.run(next.id, searchTextOf(next, finalTags));
      return factFromRow(this.selectById.get(next.fact_id) as TaggedFactRow);
    });
  }

  get(scope: string, key: string): Fact | undefined {
    const row = this.selectByKey.get(
      checkText("fact scope", scope, MAX_FACT_SCOPE),
      checkText("fact key", key, MAX_FACT_KEY),
    );
    return row ? factFromRow(row) : undefined;
  }

  getById(factId: string): Fact | undefined {
    const row = this.selectById.get(checkText("factId", factId, 200));
    return row ? factFromRow(row) : undefined;
  }

  /** Earlier versions of a fact, newest first. */
  history(factId: string): FactVersion[] {
    return this.selectHistory.all(checkText("factId", factId, 200)).map(factVersionFromRow);
  }

  /** Deletes a fact with its history and tags. */
  delete(scope: string, key: string): boolean {
    const row = [
      checkText("fact scope", scope, MAX_FACT_SCOPE),
      checkText("fact key", key, MAX_FACT_KEY),
    ];
    return this.deleteOne.run(...row).changes > 0;
  }

  /** Facts by scope and key, optionally filtered. */
  list(options: FactListOptions = {}): Fact[] {
    const o = checkOptions(options, LIST_KEYS, "FactStore.list");
    const optional = <T extends string>(what: string, value: unknown, values: readonly T[]) =>
      value === undefined ? null : checkEnum(what, value, values);
    return this.listRows
      .all({
        scope: o.scope === undefined ? null : checkText("fact scope", o.scope, MAX_FACT_SCOPE),
        category: optional("category", o.category, FACT_CATEGORIES),
        sensitivity: optional("sensitivity", o.sensitivity, FACT_SENSITIVITIES),
        policy: optional("recallPolicy", o.recallPolicy, RECALL_POLICIES),
        limit: checkLimit(o.limit),
      })
      .map(factFromRow);
  }

  /** Facts whose policy is `always`. */
  always(filter: FactScopeFilter = {}, limit = 1000): Fact[] {
    return this.alwaysRows.all({ scopes: scopesParam(filter), limit }).map(factFromRow);
  }

  /** `topic_bound` facts tagged with one of `labels`, or learned on `topicId`. */
  topicBound(
    topicId: string,
    labels: readonly string[],
    filter: FactScopeFilter = {},
    limit = 1000,
  ): Fact[] {
    return this.topicRows
      .all({ topic: topicId, labels: JSON.stringify(labels), scopes: scopesParam(filter), limit })
      .map(factFromRow);
  }

  /**
   * Facts (other than `always` ones) whose key, category, tags or value share a word with
   * `query`, best first. Any word counts: a question rarely repeats a fact's every word.
   */
  search(query: string, filter: FactScopeFilter = {}, limit = 20): Fact[] {
    if (typeof query !== "string") throw new TypeError("Expected a query string");
    const terms = searchTerms(query);
    if (terms.length === 0) return [];
    const match = terms.map((term) => `"${term}"`).join(" OR ");
    return this.matchRows
      .all({ match, scopes: scopesParam(filter), limit: checkLimit(limit) })
      .map(factFromRow);
  }

  private nextRow(
    input: NewFact,
    current: FactRow | undefined,
    scope: string,
    key: string,
  ): FactRow {
    const now = this.clock();
    const where = `fact ${scope}/${key}`;
    const sensitivity = checkEnum(
      `${where} sensitivity`,
      input.sensitivity ?? current?.sensitivity ?? "normal",
      FACT_SENSITIVITIES,
    );
    let value = checkBody(`${where} value`, input.value, MAX_FACT_VALUE);
    if (sensitivity === "secret_ref") value = checkSecretRef(value, where);
    const source = input.source === undefined ? this.currentSource(current) : input.source;
    return {
      id: current?.id ?? 0,
      fact_id: current?.fact_id ?? randomUUID(),
      scope,
      key,
      category: checkEnum(`${where} category`, input.category, FACT_CATEGORIES),
      value,
      sensitivity,
      recall_policy: checkEnum(
        `${where} recallPolicy`,
        input.recallPolicy ?? current?.recall_policy ?? "on_demand",
        RECALL_POLICIES,
      ),
      confidence: checkUnit(`${where} confidence`, input.confidence ?? current?.confidence ?? 1),
      ...this.checkSource(source, where),
      source_topic_id: this.checkSourceTopic(
        input.sourceTopicId === undefined
          ? (current?.source_topic_id ?? null)
          : input.sourceTopicId,
        where,
      ),
      version: current?.version ?? 1,
      created_at: current?.created_at ?? now,
      updated_at: now,
    };
  }

  private currentSource(current: FactRow | undefined): FactSource | null {
    if (!current?.source_session_id || !current.source_event_id) return null;
    return { sessionId: current.source_session_id, eventId: current.source_event_id };
  }

  private checkSource(source: FactSource | null, where: string) {
    if (source === null) return { source_session_id: null, source_event_id: null };
    checkOptions(source, ["sessionId", "eventId"], `${where} source`);
    const sessionId = checkSessionId(source.sessionId);
    const eventId = checkText(`${where} source eventId`, source.eventId, 200);
    if (!this.selectEvent.get(sessionId, eventId)) {
      throw notFound(`event ${eventId} in session ${sessionId}`, { sessionId, eventId });
    }
    return { source_session_id: sessionId, source_event_id: eventId };
  }

  private checkSourceTopic(topicId: string | null, where: string): string | null {
    if (topicId === null) return null;
    checkText(`${where} sourceTopicId`, topicId, 200);
    if (!this.selectTopic.get(topicId)) throw notFound(`topic ${topicId}`, { topicId });
    return topicId;
  }

  private replaceTags(factId: string, tags: readonly string[]): void {
    this.deleteTags.run(factId);
    for (const tag of tags) this.insertTag.run(factId, tag);
  }
}
