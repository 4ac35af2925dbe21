// Transcript search: TranscriptSearch.search(query, { limit: 20 }) over up to 200,000 events of
// Zipf-distributed text, for typical 2-word queries (random mid-frequency words) and the worst
// case (the two most common words), against the bare FTS5 query and a legacy scan of .jsonl files.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStateHome } from "../dist/index.js";
import { eventFactory, makeUuid, makeVocabulary } from "./fixtures.mjs";
import {
  compare,
  fmtBytes,
  fmtCount,
  fmtRatio,
  fmtSpeedup,
  fmtUs,
  met,
  openBareDb,
  prng,
  progress,
  QUICK,
  runIfMain,
  table,
  timeOnce,
  withTempDir,
} from "./lib.mjs";

const SESSION_LENGTH = 200;
const LIMIT = 20;
const VOCABULARY = 4000;
/** Typical queries draw both words from these frequency ranks (0 = the most common word). */
const MID_RANKS = [100, 1000];
/** Sessions in the database at each measurement point; the last is the target configuration. */
const CHECKPOINTS = QUICK ? [1, 10, 50] : [1, 50, 500, 1_000];
const TARGET_P50_US = 20_000;
const TYPICAL = QUICK
  ? { warmup: 20, iterations: 50, rounds: 2 }
  : { warmup: 50, iterations: 200, rounds: 5 };
const WORST = QUICK
  ? { warmup: 1, iterations: 5, rounds: 2 }
  : { warmup: 2, iterations: 10, rounds: 4 };
/** The legacy scan reads every file per query: only a few runs, and only at the larger sizes. */
const LEGACY = { warmup: 1, iterations: QUICK ? 2 : 5, rounds: 1 };
const LEGACY_FROM_EVENTS = QUICK ? 2_000 : 10_000;

function grow(agent, next, sessions, dir, rand, upTo) {
  while (sessions.length < upTo) {
    const sessionId = makeUuid(rand);
    for (let done = 0; done < SESSION_LENGTH; done += 100) {
      agent.transcripts.appendMany(sessionId, Array.from({ length: 100 }, next));
    }
    writeFileSync(
      join(dir, `${sessionId}.jsonl`),
      [...agent.transcripts.exportJsonl(sessionId)].join(""),
    );
    sessions.push(sessionId);
  }
}

function textOf(event) {
  const content = event.message?.content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? b.name : ""))
    .join("\n")
    .toLowerCase();
}

/**
 * The legacy way to search: read every transcript file, keep lines containing both words (a raw
 * substring prefilter, then a word match on the parsed message text), first 20 in file order. No
 * ranking, so a lower bound for a legacy "top 20".
 */
function legacySearch(dir, words) {
  const patterns = words.map((w) => new RegExp(`\\b${w}\\b`));
  const hits = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(".jsonl")) continue;
    for (const line of readFileSync(join(dir, name), "utf8").split("\n")) {
      const lower = line.toLowerCase();
      if (!words.every((w) => lower.includes(w))) continue;
      const event = JSON.parse(line);
      const text = textOf(event);
      if (patterns.every((p) => p.test(text)) && hits.length < LIMIT) hits.push(event);
    }
  }
  return hits;
}

function makeQueries(vocab, count) {
  const rand = prng(77);
  const rank = () => MID_RANKS[0] + Math.floor(rand() * (MID_RANKS[1] - MID_RANKS[0]));
  return Array.from({ length: count }, () => {
    const a = vocab.words[rank()];
    let b = vocab.words[rank()];
    while (b === a) b = vocab.words[rank()];
    return [a, b];
  });
}

/** Documents containing a word, from FTS5's own vocabulary table. */
function docFrequency(db) {
  db.exec("CREATE VIRTUAL TABLE temp.fts_vocab USING fts5vocab(main, transcript_fts, row)");
  const select = db.prepare("SELECT doc FROM temp.fts_vocab WHERE term = ?");
  return (word) => select.get(word)?.doc ?? 0;
}

/**
 * Diagnostic statements on the bare connection, to see where search time goes: the store's own
 * SQL (as in transcript-search.ts: join, then rank every match) without the JS that turns rows
 * into hits, and the same result ranked inside FTS first, joining only the 20 winners.
 */
function prepareDiagnostics(bare) {
  return {
    storeSql: bare.prepare(`SELECT e.*, bm25(transcript_fts) AS score FROM transcript_fts
      JOIN transcript_events e ON e.id = transcript_fts.rowid
      WHERE transcript_fts MATCH ? ORDER BY score LIMIT ?`),
    ftsFirst: bare.prepare(`SELECT e.*, f.score FROM
      (SELECT rowid, bm25(transcript_fts) AS score FROM transcript_fts
        WHERE transcript_fts MATCH ? ORDER BY score LIMIT ?) AS f
      JOIN transcript_events e ON e.id = f.rowid ORDER BY f.score`),
  };
}

function measure(agent, sql, dir, queries, worst, events) {
  const match = (words) => words.map((w) => `"${w}"`).join(" ");
  const query = (i) => queries[i % queries.length];
  const typicalCases = {
    store: { ...TYPICAL, fn: (i) => agent.search.search(query(i).join(" "), { limit: LIMIT }) },
    floor: { ...TYPICAL, fn: (i) => sql.fts.all(match(query(i)), LIMIT) },
    storeSql: { ...TYPICAL, fn: (i) => sql.storeSql.all(match(query(i)), LIMIT) },
    ftsFirst: { ...TYPICAL, fn: (i) => sql.ftsFirst.all(match(query(i)), LIMIT) },
  };
  const worstCases = {
    store: { ...WORST, fn: () => agent.search.search(worst.join(" "), { limit: LIMIT }) },
    floor: { ...WORST, fn: () => sql.fts.all(match(worst), LIMIT) },
    storeSql: { ...WORST, fn: () => sql.storeSql.all(match(worst), LIMIT) },
    ftsFirst: { ...WORST, fn: () => sql.ftsFirst.all(match(worst), LIMIT) },
  };
  if (events >= LEGACY_FROM_EVENTS) {
    typicalCases.legacy = { ...LEGACY, fn: (i) => legacySearch(dir, queries[i % queries.length]) };
    worstCases.legacy = { ...LEGACY, fn: () => legacySearch(dir, worst) };
  }
  return { typical: compare(typicalCases), worst: compare(worstCases) };
}

function rowsOf(results, kind, target) {
  return results.map((r) => {
    const m = r[kind];
    return [
      fmtCount(r.events),
      `${fmtUs(m.store.p50)} / ${fmtUs(m.store.p99)} / ${fmtUs(m.store.max)}`,
      `${fmtUs(m.floor.p50)} / ${fmtUs(m.floor.p99)}`,
      fmtRatio(m.store.p50 / m.floor.p50),
      m.legacy ? `${fmtUs(m.legacy.p50)} (n=${m.legacy.n})` : "–",
      m.legacy ? fmtSpeedup(m.legacy.p50 / m.store.p50) : "–",
      target ? "p50 < 20 ms" : "(report only)",
      target ? met(m.store.p50 < TARGET_P50_US) : "–",
    ];
  });
}

export async function run() {
  return withTempDir("search", (dir) => {
    const vocab = makeVocabulary(VOCABULARY);
    const next = eventFactory(vocab, 31);
    const rand = prng(6);
    const home = openStateHome({ home: join(dir, "home") });
    const agent = home.agent("bench");
    const bare = openBareDb(agent.db.path, { readonly: true });
    const fts = bare.prepare(
      "SELECT rowid FROM transcript_fts WHERE transcript_fts MATCH ? ORDER BY rank LIMIT ?",
    );
    const diagnostics = prepareDiagnostics(bare);
    const queries = makeQueries(vocab, 500);
    const worst = [vocab.words[0], vocab.words[1]];
    const sessions = [];
    const results = [];
    let seedMs = 0;
    for (const upTo of CHECKPOINTS) {
      progress(`search: seeding up to ${fmtCount(upTo)} sessions × ${SESSION_LENGTH} events`);
      seedMs += timeOnce(() => grow(agent, next, sessions, dir, rand, upTo)).ms;
      const events = upTo * SESSION_LENGTH;
      progress(`search: measuring at ${fmtCount(events)} events`);
      const sql = { fts, ...diagnostics };
      results.push({ events, ...measure(agent, sql, dir, queries, worst, events) });
    }
    const df = docFrequency(bare);
    const typicalDf = queries
      .flat()
      .map(df)
      .sort((a, b) => a - b);
    const hitCounts = queries.slice(0, 100).map((q) => fts.all(`"${q[0]}" "${q[1]}"`, 1e9).length);
    const worstDf = worst.map(df);
    const dbBytes = agent.db.sizeBytes();
    bare.close();
    home.close();

    const last = results.at(-1);
    const events = fmtCount(last.events);
    const targets = [
      {
        name: `search top ${LIMIT}, typical 2-word query, p50 < 20 ms at ${events} events`,
        value: `p50 ${fmtUs(last.typical.store.p50)}, p99 ${fmtUs(last.typical.store.p99)}`,
        met: last.typical.store.p50 < TARGET_P50_US,
      },
    ];
    const headers = [
      "events",
      "store p50 / p99 / max",
      "floor p50 / p99",
      "store ÷ floor",
      "legacy scan p50",
      "vs legacy (p50)",
      "target",
      "met?",
    ];
    const lastTotal = last.events;
    const markdown = [
      `## Transcript search (top ${LIMIT})`,
      "",
      `\`search.search("w1 w2", { limit: ${LIMIT} })\` over sessions of ${SESSION_LENGTH} events (user, assistant,`,
      "tool-call and tool-result messages of 5–60 words drawn from a",
      `${fmtCount(VOCABULARY)}-word vocabulary with a Zipf (1/rank) distribution; seeding with appendMany is not`,
      `measured and took ${(seedMs / 1000).toFixed(1)} s; database ${fmtBytes(dbBytes)} at ${events} events).`,
      `**Typical** = 500 queries of two random words of frequency rank ${MID_RANKS[0]}–${MID_RANKS[1]}; at ${events}`,
      `events each word is in ${fmtCount(typicalDf[0])}–${fmtCount(typicalDf.at(-1))} documents (median`,
      `${fmtCount(typicalDf[typicalDf.length >> 1])}); a query matches ${fmtCount(Math.min(...hitCounts))}–${fmtCount(Math.max(...hitCounts))} events.`,
      `**Worst** = the two most common words, "${worst[0]}" and "${worst[1]}", in ${fmtCount(worstDf[0])} and`,
      `${fmtCount(worstDf[1])} of the ${fmtCount(lastTotal)} events' index documents.`,
      "**Floor** = bare `SELECT rowid FROM transcript_fts WHERE transcript_fts MATCH ? ORDER BY rank",
      "LIMIT 20` on a second connection (no join, no JSON, no snippets). `store ÷ floor` = p50 ÷ p50.",
      "**Legacy** = read every session's `.jsonl`, keep the lines containing both words, first 20, no",
      "ranking (a lower bound); measured a few times from 10,000 events up.",
      "",
      "### Typical 2-word queries",
      "",
      table(headers, rowsOf(results, "typical", true)),
      "",
      "### Worst case: the two most common words",
      "",
      table(headers, rowsOf(results, "worst", false)),
      "",
      "### Where the time goes (p50)",
      "",
      "The store's SQL run bare (join, `ORDER BY bm25` over every match, no JS), and the same rows",
      "ranked inside FTS first with only the 20 winners joined (a diagnostic; not what the store runs).",
      "",
      table(
        [
          "events",
          "query",
          "store search()",
          "store's SQL alone",
          "FTS-first subquery",
          "floor (ORDER BY rank)",
        ],
        results.flatMap((r) =>
          ["typical", "worst"].map((kind) => [
            fmtCount(r.events),
            kind,
            fmtUs(r[kind].store.p50),
            fmtUs(r[kind].storeSql.p50),
            fmtUs(r[kind].ftsFirst.p50),
            fmtUs(r[kind].floor.p50),
          ]),
        ),
      ),
    ].join("\n");
    return { name: "search", markdown, targets, extra: { worstP50: last.worst.store.p50 } };
  });
}

await runIfMain(import.meta.url, run);
