import { NON_ASCII } from "./fts-query.js";

/**
 * Matching of events the full-text index has not taken in yet (the few a writer leaves behind its
 * watermark, or a backlog a read-only connection cannot index): the same tokens as FTS5's
 * `unicode61 remove_diacritics 2` (letters, digits and private-use characters; case and
 * diacritics folded), the same query shape `toFtsQuery` builds (quoted phrases, all required, an
 * optional `*` after a phrase making its last token a prefix) and the same bm25.
 */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;
const PHRASE = /"([^"]*)"(\*)?/g;

export interface QueryPhrase {
  /** The phrase as it stands in the query (`"a b"` or `"a"*`), a query of its own. */
  text: string;
  tokens: string[];
  prefix: boolean;
}

/**
 * What FTS5's bm25 reads of the index it ranks in, for scores that stand beside its own. Only
 * asked when a document matches.
 */
export interface IndexFigures {
  /** Rows in the index, and tokens in all of them. */
  totals(): { rows: number; tokens: number };
  /** Rows of the index matching one phrase (a query of its own). */
  rowsMatching(phrase: string): number;
}

const ASCII_TOKEN = /[a-z0-9]+/g;

export function tokenize(text: string): string[] {
  // ASCII needs no folding of diacritics, and its letters and digits are the only tokens it has.
  if (!NON_ASCII.test(text)) return text.toLowerCase().match(ASCII_TOKEN) ?? [];
  const folded = text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
  return folded.match(TOKEN) ?? [];
}

/** The phrases of a query string built by `toFtsQuery`. */
export function parseFtsQuery(query: string): QueryPhrase[] {
  const phrases: QueryPhrase[] = [];
  for (const match of query.matchAll(PHRASE)) {
    const tokens = tokenize(match[1] ?? "");
    if (tokens.length > 0) phrases.push({ text: match[0], tokens, prefix: match[2] === "*" });
  }
  return phrases;
}

function occurrences(doc: readonly string[], phrase: QueryPhrase): number {
  const { tokens, prefix } = phrase;
  const last = tokens.length - 1;
  let count = 0;
  for (let start = 0; start + last < doc.length; start++) {
    let whole = true;
    for (let i = 0; i <= last && whole; i++) {
      const word = doc[start + i] as string;
      const wanted = tokens[i] as string;
      whole = prefix && i === last ? word.startsWith(wanted) : word === wanted;
    }
    if (whole) count++;
  }
  return count;
}

/** The first token of each phrase of a `toFtsQuery` query: a match holds every one of them. */
export function requiredTokens(query: string): string[] {
  return parseFtsQuery(query).map((phrase) => phrase.tokens[0] as string);
}

/**
 * False only when `source` (a text, or an event's JSON) cannot hold every token: it is ASCII with
 * no `\u` escape, so every character of a text it gives is in it as it stands, and one token
 * is not found in it in lower case. Rules most texts out without cutting them into tokens.
 */
export function mayHold(source: string, tokens: readonly string[]): boolean {
  if (NON_ASCII.test(source) || source.includes("\\u")) return true;
  const lower = source.toLowerCase();
  return tokens.every((token) => lower.includes(token));
}

/** FTS5's bm25 constants. */
const K1 = 1.2;
const B = 0.75;

/**
 * Scores documents against a query as FTS5's bm25 ranks them: negative, lower is better, null
 * for a document that misses a phrase. With the figures of an index, a score is the one bm25
 * gives the document once it joins that index with the others of the batch (the same row count,
 * average length and rows per phrase), so it stands beside the index's own scores. Without them,
 * every phrase weighs alike and the scores only compare within the batch.
 */
export function scoreDocuments(
  texts: readonly string[],
  query: string,
  index?: IndexFigures,
): Array<number | null> {
  const phrases = parseFtsQuery(query);
  if (phrases.length === 0) return texts.map(() => null);
  const required = phrases.map((phrase) => phrase.tokens[0] as string);
  const counts = texts.map((text) => {
    if (!mayHold(text, required)) return null;
    const doc = tokenize(text);
    const tf = phrases.map((phrase) => occurrences(doc, phrase));
    return tf.every((n) => n > 0) ? tf : null;
  });
  if (counts.every((tf) => tf === null)) return counts;
  const docs = texts.map(tokenize);
  const batchTokens = docs.reduce((sum, doc) => sum + doc.length, 0);
  const indexed = index?.totals() ?? { rows: 0, tokens: 0 };
  // Every text but an empty one becomes a row of the index (transcript-index.ts skips those).
  const rows = indexed.rows + texts.filter((text) => text !== "").length;
  const average = (indexed.tokens + batchTokens) / Math.max(1, rows);
  const weights = phrases.map((phrase) => {
    if (index === undefined) return 1;
    const inBatch = docs.filter((doc) => occurrences(doc, phrase) > 0).length;
    const hits = index.rowsMatching(phrase.text) + inBatch;
    // FTS5 floors a weight that would be negative (a phrase in most rows) at a millionth.
    const idf = Math.log((rows - hits + 0.5) / (hits + 0.5));
    return idf > 0 ? idf : 1e-6;
  });
  return counts.map((tf, d) => {
    if (tf === null) return null;
    const length = docs[d]?.length ?? 0;
    let score = 0;
    for (const [p, n] of tf.entries()) {
      const norm = K1 * (1 - B + (B * length) / Math.max(1, average));
      score -= ((weights[p] ?? 1) * (n * (K1 + 1))) / (n + norm);
    }
    return score;
  });
}

/**
 * FTS5's totals, from the `averages` record of its `_data` table (rowid 1): the row count, then
 * the tokens of each column, as SQLite varints (big-endian, 7 bits a byte, the ninth byte whole).
 */
export function decodeFtsAverages(block: Uint8Array): { rows: number; tokens: number[] } {
  const values: number[] = [];
  for (let at = 0; at < block.length; ) {
    let value = 0;
    for (let k = 0; ; k++) {
      const byte = block[at++] ?? 0;
      if (k === 8) {
        value = value * 256 + byte;
        break;
      }
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    values.push(value);
  }
  const [rows = 0, ...tokens] = values;
  return { rows, tokens };
}
