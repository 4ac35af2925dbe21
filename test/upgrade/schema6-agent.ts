// Builds an agent database exactly as the schema-6 release left it, without the code under test:
// the committed 0001..0006 files applied by a raw connection and bookkept as `migrate` did, then
// rows written as the schema-6 TranscriptStore (commit 6f360ad) wrote them per append. The JSONL
// lines written are kept as the oracle.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import {
  openRawSqlite,
  type RawSqlite,
  type RawStatement,
} from "../../src/db/test-support/raw-sqlite.js";
import { encodeForStorage } from "../../src/transcript/blobs.js";
import type { TranscriptEvent } from "../../src/transcript/event.js";
import { encodeEvent } from "../../src/transcript/jsonl-codec.js";
import { searchableText } from "../../src/transcript/search-text.js";

const AGENT_SCHEMA = fileURLToPath(new URL("../../src/db/schema/agent/", import.meta.url));
const INLINE_BLOB_THRESHOLD = 16 * 1024;

/** Creates `path` at schema 6, bookkept row for row as `migrate` records a migration. */
export function createSchema6(path: string): RawSqlite {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const raw = openRawSqlite(path);
  raw.exec("PRAGMA journal_mode = WAL");
  raw.exec("PRAGMA foreign_keys = ON");
  const files = readdirSync(AGENT_SCHEMA)
    .filter((name) => /^000[1-6]_.*\.sql$/.test(name))
    .sort();
  raw.exec("BEGIN IMMEDIATE");
  raw.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      sha256 TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`);
  const record = raw.prepare(
    "INSERT INTO schema_migrations (version, name, sha256, applied_at) VALUES (?, ?, ?, ?)",
  );
  for (const file of files) {
    const sql = readFileSync(`${AGENT_SCHEMA}${file}`, "utf8");
    raw.exec(sql);
    const name = file.slice(5, -4);
    record.run(Number(file.slice(0, 4)), name, createHash("sha256").update(sql).digest("hex"), 1);
  }
  raw.exec("PRAGMA user_version = 6");
  raw.exec("COMMIT");
  return raw;
}

interface SessionTail {
  lastSeq: number;
  leaf: string | null;
  updatedAt: number;
}

function eventTime(event: TranscriptEvent, fallback: number): number {
  const parsed = typeof event.timestamp === "string" ? Date.parse(event.timestamp) : Number.NaN;
  return Number.isFinite(parsed) ? parsed : fallback;
}

/** Writes events as the schema-6 append did; `lines` keeps what each session should export. */
export class Schema6Writer {
  readonly lines = new Map<string, string[]>();
  readonly tails = new Map<string, SessionTail>();
  private readonly statements: Record<string, RawStatement>;
  private readonly now = 1_760_000_000_000;

  constructor(readonly raw: RawSqlite) {
    const s = (sql: string) => raw.prepare(sql);
    this.statements = {
      session: s(
        "INSERT INTO sessions (session_id, session_key, created_at, updated_at) VALUES (?, ?, ?, ?)",
      ),
      event: s(
        "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
      ),
      identity: s(`INSERT INTO transcript_event_identities
         (session_id, event_id, seq, event_type, has_parent, parent_id, message_idempotency_key, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
      text: s("INSERT INTO transcript_fts (rowid, text) VALUES (?, ?)"),
      blob: s(`INSERT INTO transcript_blobs (sha256, mime_type, size_bytes, data, created_at)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING`),
      blobRef: s(
        "INSERT OR IGNORE INTO transcript_blob_refs (session_id, seq, sha256) VALUES (?, ?, ?)",
      ),
      tail: s(
        "UPDATE sessions SET last_seq = ?, leaf_event_id = ?, updated_at = max(updated_at, ?) WHERE session_id = ?",
      ),
      leaf: s("UPDATE sessions SET leaf_event_id = ? WHERE session_id = ?"),
    };
  }

  /** Runs `body` in one write transaction, as one schema-6 appendMany did. */
  tx(body: () => void): void {
    this.raw.exec("BEGIN IMMEDIATE");
    try {
      body();
      this.raw.exec("COMMIT");
    } catch (error) {
      this.raw.exec("ROLLBACK");
      throw error;
    }
  }

  /** One event, stored as given (ids, parents and times chosen by the caller). */
  append(sessionId: string, event: TranscriptEvent, key: string | null = null): number {
    const st = this.statements;
    const createdAt = eventTime(event, this.now);
    let tail = this.tails.get(sessionId);
    if (tail === undefined) {
      st.session?.run(sessionId, `agent:main:${sessionId}`, createdAt, createdAt);
      tail = { lastSeq: 0, leaf: null, updatedAt: createdAt };
      this.tails.set(sessionId, tail);
      this.lines.set(sessionId, []);
    }
    const seq = tail.lastSeq + 1;
    const { json, blobs } = encodeForStorage(event, INLINE_BLOB_THRESHOLD);
    const rowid = st.event?.run(sessionId, seq, json, createdAt).lastInsertRowid;
    const parent = typeof event.parentId === "string" ? event.parentId : null;
    st.identity?.run(
      sessionId,
      event.id,
      seq,
      event.type,
      parent === null ? 0 : 1,
      parent,
      key,
      createdAt,
    );
    for (const blob of blobs) {
      st.blob?.run(blob.sha256, blob.mimeType, blob.data.length, blob.data, this.now);
      st.blobRef?.run(sessionId, seq, blob.sha256);
    }
    const text = searchableText(event);
    if (text !== "") st.text?.run(rowid, text);
    tail.lastSeq = seq;
    if (event.type !== "session") tail.leaf = event.id;
    tail.updatedAt = Math.max(tail.updatedAt, createdAt);
    st.tail?.run(seq, tail.leaf, tail.updatedAt, sessionId);
    this.lines.get(sessionId)?.push(`${encodeEvent(event)}\n`);
    return seq;
  }

  /** What schema-6 `branch(sessionId, eventId)` without a summary did: move the leaf only. */
  branch(sessionId: string, eventId: string): void {
    this.statements.leaf?.run(eventId, sessionId);
    const tail = this.tails.get(sessionId);
    if (tail) tail.leaf = eventId;
  }
}

let counter = 0;

/** A message event in the legacy shape. */
export function message(
  id: string,
  parentId: string | null,
  role: "user" | "assistant",
  content: unknown[],
  extra: Record<string, unknown> = {},
): TranscriptEvent {
  counter += 1;
  const timestamp = new Date(1_760_000_000_000 + counter * 1000).toISOString();
  return { type: "message", id, parentId, timestamp, message: { role, content, ...extra } };
}

export function header(sessionId: string): TranscriptEvent {
  return {
    type: "session",
    version: 3,
    id: sessionId,
    timestamp: new Date(1_760_000_000_000).toISOString(),
    cwd: "/srv/agent",
  };
}

export const text = (value: string) => ({ type: "text", text: value });
