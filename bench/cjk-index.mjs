// CJK search: the index agentstate builds (unicode61 over bigram-cut text, `ftsDocument`) against
// FTS5's built-in `trigram` tokenizer as a companion index, on the real CJK sessions of the shared
// corpus repeated to ~50,000 events: index size, build time, and query p50/p99 for 2-, 3- and
// 4-character CJK words and latin words. trigram cannot match a query shorter than 3 characters.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ftsDocument } from "../dist/transcript/cjk-terms.js";
import { toFtsQuery } from "../dist/transcript/fts-query.js";
import { searchableText } from "../dist/transcript/search-text.js";
import {
  fmtBytes,
  fmtCount,
  fmtUs,
  openBareDb,
  progress,
  QUICK,
  runIfMain,
  stats,
  table,
  timeOnce,
  withTempDir,
} from "./lib.mjs";

const CORPUS = fileURLToPath(new URL("../../shared/corpus/real/", import.meta.url));
const TARGET_EVENTS = QUICK ? 5_000 : 50_000;
const ITERATIONS = QUICK ? 50 : 300;
const CJK = /\p{scx=Han}|\p{scx=Hiragana}|\p{scx=Katakana}|\p{scx=Hangul}/u;
export const QUERIES = {
  "CJK, 2 chars": ["仓库", "密钥", "飞书", "点击", "创建", "方案"],
  "CJK, 3 chars": ["服务器", "找到了", "配置文"],
  "CJK, 4 chars": ["配置文件", "销售数据", "支持的通", "服务器的"],
  latin: ["config", "gateway", "error", "openclaw"],
};

function* sessionFiles(dir, inSessions = false) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "_versions") continue;
    const path = join(dir, entry.name);
    const parent = dir.split("/").at(-2);
    if (entry.isDirectory())
      yield* sessionFiles(path, entry.name === "sessions" && parent === "agents");
    else if (inSessions && /\.jsonl(\.(deleted|reset)\..+)?$/.test(entry.name)) yield path;
  }
}

/** The searchable text of every event of the corpus sessions that hold any CJK text. */
export function corpusTexts() {
  const texts = [];
  for (const path of sessionFiles(CORPUS)) {
    const lines = readFileSync(path, "utf8").split("\n");
    const events = lines.flatMap((line) => {
      try {
        return line.trim() === "" ? [] : [JSON.parse(line)];
      } catch {
        return [];
      }
    });
    const session = events.map(searchableText).filter((text) => text !== "");
    if (session.some((text) => CJK.test(text))) texts.push(...session);
  }
  return texts;
}

const CJK_RUN =
  /(?:(?=[\p{L}\p{Nl}])[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}])+/gu;

/** ftsDocument without the last character of each run: what that one extra token costs. */
function bigramsOnly(text) {
  return text.normalize("NFC").replace(CJK_RUN, (run) => {
    const chars = Array.from(run);
    const pieces = chars.length < 2 ? chars : chars.slice(1).map((c, i) => chars[i] + c);
    return ` ${pieces.join(" ")} `;
  });
}

const INDEXES = {
  "bigram, no last char": {
    create: `CREATE VIRTUAL TABLE fts USING fts5 (text, content = '', contentless_delete = 1,
      tokenize = 'unicode61 remove_diacritics 2')`,
    document: bigramsOnly,
    query: toFtsQuery,
  },
  bigram: {
    create: `CREATE VIRTUAL TABLE fts USING fts5 (text, content = '', contentless_delete = 1,
      tokenize = 'unicode61 remove_diacritics 2')`,
    document: ftsDocument,
    query: toFtsQuery,
  },
  trigram: {
    create: `CREATE VIRTUAL TABLE fts USING fts5 (text, content = '', contentless_delete = 1,
      tokenize = 'trigram')`,
    document: (text) => text,
    query: (word) => `"${word.replaceAll('"', '""')}"`,
  },
};

function build(dir, name, texts) {
  const spec = INDEXES[name];
  const path = join(dir, `${name.replaceAll(/\W/g, "-")}.sqlite`);
  const db = openBareDb(path);
  db.exec(spec.create);
  const insert = db.prepare("INSERT INTO fts (rowid, text) VALUES (?, ?)");
  const { ms } = timeOnce(() => {
    db.exec("BEGIN");
    for (let i = 0; i < TARGET_EVENTS; i++)
      insert.run(i + 1, spec.document(texts[i % texts.length]));
    db.exec("COMMIT");
  });
  db.exec("INSERT INTO fts (fts) VALUES ('optimize')");
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.exec("VACUUM");
  const bytes = statSync(path).size;
  return { db, spec, ms, bytes };
}

function measure({ db, spec }, words) {
  const search = db.prepare("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 20");
  const count = db.prepare("SELECT count(*) AS n FROM fts WHERE fts MATCH ?");
  const hits = words.map((word) => count.get(spec.query(word)).n);
  const samples = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const match = spec.query(words[i % words.length]);
    const start = process.hrtime.bigint();
    search.all(match);
    samples.push(Number(process.hrtime.bigint() - start));
  }
  return { hits, ...stats(samples) };
}

export async function run() {
  const texts = corpusTexts();
  progress(
    `cjk-index: ${fmtCount(texts.length)} corpus events, repeated to ${fmtCount(TARGET_EVENTS)}`,
  );
  return withTempDir("cjk-index", (dir) => {
    const results = {};
    for (const name of Object.keys(INDEXES)) {
      progress(`cjk-index: building ${name}`);
      const index = build(dir, name, texts);
      results[name] = { ms: index.ms, bytes: index.bytes, queries: {} };
      for (const [kind, words] of Object.entries(QUERIES))
        results[name].queries[kind] = measure(index, words);
      index.db.close();
    }
    const rows = Object.keys(QUERIES).flatMap((kind) =>
      Object.entries(results).map(([name, r]) => {
        const q = r.queries[kind];
        return [kind, name, q.hits.join(" / "), fmtUs(q.p50), fmtUs(q.p99)];
      }),
    );
    const markdown = [
      "## CJK search index: bigrams (unicode61) vs trigram",
      "",
      `${fmtCount(TARGET_EVENTS)} events: the ${fmtCount(texts.length)} searchable events of the corpus sessions holding CJK text, repeated.`,
      "",
      table(
        ["index", "size (after VACUUM)", "build"],
        Object.entries(results).map(([name, r]) => [
          name,
          fmtBytes(r.bytes),
          `${Math.round(r.ms)} ms`,
        ]),
      ),
      "",
      `Queries (\`ORDER BY bm25 LIMIT 20\`, ${ITERATIONS} runs over the words of each kind); hits = matching events per word.`,
      "",
      table(["query", "index", "hits per word", "p50", "p99"], rows),
    ].join("\n");
    return { name: "cjk-index", markdown, targets: [] };
  });
}

await runIfMain(import.meta.url, run);
