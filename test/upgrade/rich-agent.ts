// The content every upgrade test starts from: several sessions, a branch whose leaf is not the
// last event, idempotency keys, one large image shared by two sessions, CJK text, a real corpus
// session (when the shared corpus is beside the project) and memory rows pointing at events.
// What the schema-6 database held is recorded here, read back by a raw connection, so the
// upgraded database is compared with it and not with itself.
import { randomBytes } from "node:crypto";
import { corpusTranscripts } from "../../src/test-support/corpus.js";
import type { TranscriptEvent } from "../../src/transcript/event.js";
import { createSchema6, header, message, Schema6Writer, text } from "./schema6-agent.js";

export const ALPHA = "alpha-session";
export const BETA = "beta-session";
export const BULK = "bulk-session";
export const CORPUS_FILE = "c3ad7fc1-d94b-4ecf-ae49-a6c7dba18a9e.jsonl";
export const CORPUS_SESSION = "c3ad7fc1-d94b-4ecf-ae49-a6c7dba18a9e";
/** Words the schema-6 index found, searched again after the upgrade. */
export const PROBES = ["kubernetes", "rollback", "persona", "支持的通道列表", "quarterly"];
/** Words inside a CJK run: the schema-6 index (one token per run) could not find them. */
export const CJK_WORDS = ["通道", "支持"];
export const MEMORY_TABLES = ["topics", "topic_membership", "facts", "fact_tags"] as const;

export interface Schema6Fixture {
  /** Per session, the JSONL lines written: what exportJsonl must return byte for byte. */
  lines: Map<string, string>;
  leaves: Map<string, string | null>;
  counts: Map<string, number>;
  keys: { sessionId: string; key: string; eventId: string }[];
  /** The base64 text of the shared image, as the events carried it. */
  image: string;
  /** Per probe word, the `session_id:seq` hits of the schema-6 index. */
  hits: Map<string, string[]>;
  /** The memory tables' rows as the schema-6 database held them. */
  memory: Record<string, unknown[]>;
}

function alpha(w: Schema6Writer, image: string): void {
  w.append(ALPHA, header(ALPHA));
  w.append(ALPHA, message("a1", null, "user", [text("deploy the kubernetes cluster")]), "key-a1");
  w.append(ALPHA, message("a2", "a1", "assistant", [text("plan: three nodes, canary first")]));
  w.append(ALPHA, message("a3", "a2", "user", [text("show the diagram"), image3(image)]));
  w.append(ALPHA, message("a4", "a3", "assistant", [text("rollback if canary fails")]), "key-a4");
  w.branch(ALPHA, "a2");
}

function image3(data: string) {
  return { type: "image", data, mimeType: "image/png" };
}

function beta(w: Schema6Writer, image: string): void {
  w.append(BETA, header(BETA));
  w.append(BETA, message("b1", null, "user", [text("请给我支持的通道列表")]), "key-b1");
  w.append(BETA, message("b2", "b1", "assistant", [text("同じ画像"), image3(image)]));
  w.append(BETA, message("b3", "b2", "user", [text("quarterly numbers please")]));
}

function corpus(w: Schema6Writer): void {
  const files = corpusTranscripts();
  // A clone without ../shared has no corpus: there (never under CI, where corpusTranscripts
  // throws) the fixture goes without the real session, as the corpus tests skip.
  if (files.length === 0) return;
  const file = files.find((f) => f.name.endsWith(CORPUS_FILE));
  if (file === undefined) throw new Error(`corpus session ${CORPUS_FILE} is missing`);
  for (const line of file.text.split("\n").filter((l) => l !== "")) {
    w.append(CORPUS_SESSION, JSON.parse(line) as TranscriptEvent);
  }
}

/** Many short events in one session, in transactions of 1000 (for the crash tests). */
function bulk(w: Schema6Writer, events: number): void {
  w.tx(() => w.append(BULK, header(BULK)));
  for (let done = 1; done < events; ) {
    w.tx(() => {
      for (const end = Math.min(events, done + 1000); done < end; done++) {
        const id = `n${done}`;
        const parent = done === 1 ? null : `n${done - 1}`;
        const words = `bulk note ${done} quarterly ${done % 7 === 0 ? "kubernetes" : "plain"}`;
        w.append(
          BULK,
          message(id, parent, done % 2 ? "user" : "assistant", [text(words)]),
          `bulk-${done}`,
        );
      }
    });
  }
}

function memory(w: Schema6Writer): void {
  w.raw.exec(`
    INSERT INTO topics (topic_id, session_id, title, status, labels_json, created_at, updated_at, last_active_at)
      VALUES ('topic-deploy', '${ALPHA}', 'Deploy plan', 'open', '["deploy"]', 1, 2, 3);
    INSERT INTO topic_membership (session_id, event_id, topic_id, score, is_primary, reason, created_at)
      VALUES ('${ALPHA}', 'a1', 'topic-deploy', 1, 1, 'asked', 4),
             ('${ALPHA}', 'a4', 'topic-deploy', 0.5, 0, NULL, 5);
    INSERT INTO facts (fact_id, scope, key, category, value, sensitivity, recall_policy, confidence,
        source_session_id, source_event_id, source_topic_id, version, created_at, updated_at)
      VALUES ('fact-region', 'agent', 'deploy.region', 'project', 'frankfurt datacenter', 'normal',
        'on_demand', 0.9, '${ALPHA}', 'a2', 'topic-deploy', 1, 6, 6),
             ('fact-token', 'agent', 'deploy.token', 'security', 'env:DEPLOY_TOKEN', 'secret_ref',
        'on_demand', 1, NULL, NULL, NULL, 1, 7, 7);
    INSERT INTO fact_tags (fact_id, tag) VALUES ('fact-region', 'deploy'), ('fact-region', 'region');
    INSERT INTO facts_fts (rowid, text)
      SELECT id, 'deploy.region project deploy region frankfurt datacenter' FROM facts WHERE fact_id = 'fact-region';
    INSERT INTO facts_fts (rowid, text)
      SELECT id, 'deploy.token security ' FROM facts WHERE fact_id = 'fact-token';`);
}

function recordOracle(w: Schema6Writer, image: string): Schema6Fixture {
  const raw = w.raw;
  const hitsOf = raw.prepare(
    `SELECT e.session_id || ':' || e.seq FROM transcript_fts f
     JOIN transcript_events e ON e.id = f.rowid WHERE transcript_fts MATCH ? ORDER BY 1`,
  );
  const keys = raw
    .prepare(
      `SELECT session_id AS sessionId, message_idempotency_key AS key, event_id AS eventId
       FROM transcript_event_identities WHERE message_idempotency_key IS NOT NULL
         AND session_id <> '${BULK}' ORDER BY 1, 2`,
    )
    .all() as Schema6Fixture["keys"];
  return {
    lines: new Map([...w.lines].map(([id, lines]) => [id, lines.join("")])),
    leaves: new Map([...w.tails].map(([id, tail]) => [id, tail.leaf])),
    counts: new Map([...w.tails].map(([id, tail]) => [id, tail.lastSeq])),
    keys,
    image,
    hits: new Map(PROBES.map((word) => [word, hitsOf.pluck().all(`"${word}"`) as string[]])),
    memory: Object.fromEntries(
      MEMORY_TABLES.map((table) => [
        table,
        raw.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all(),
      ]),
    ),
  };
}

/** Writes the schema-6 agent database at `path` and returns what it holds. */
export function buildSchema6Agent(
  path: string,
  options: { bulkEvents?: number } = {},
): Schema6Fixture {
  const raw = createSchema6(path);
  try {
    const w = new Schema6Writer(raw);
    // Over the 16 KiB threshold: stored once in transcript_blobs, referenced by both sessions.
    const image = randomBytes(18 * 1024).toString("base64");
    w.tx(() => alpha(w, image));
    w.tx(() => beta(w, image));
    w.tx(() => corpus(w));
    if (options.bulkEvents) bulk(w, options.bulkEvents);
    w.tx(() => memory(w));
    return recordOracle(w, image);
  } finally {
    raw.close();
  }
}
