/**
 * Matching of events the full-text index has not taken in yet, for a connection that cannot
 * write the index (a read-only one): the same tokens as FTS5's `unicode61 remove_diacritics 2`
 * (letters, digits and private-use characters; case and diacritics folded) and the same query
 * shape `toFtsQuery` builds (quoted phrases, all required, an optional `*` after a phrase making
 * its last token a prefix).
 */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;
const PHRASE = /"([^"]*)"(\*)?/g;

export interface QueryPhrase {
  tokens: string[];
  prefix: boolean;
}

export function tokenize(text: string): string[] {
  const folded = text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
  return folded.match(TOKEN) ?? [];
}

/** The phrases of a query string built by `toFtsQuery`. */
export function parseFtsQuery(query: string): QueryPhrase[] {
  const phrases: QueryPhrase[] = [];
  for (const match of query.matchAll(PHRASE)) {
    const tokens = tokenize(match[1] ?? "");
    if (tokens.length > 0) phrases.push({ tokens, prefix: match[2] === "*" });
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

/**
 * Scores documents against a query as bm25 would rank them among themselves (k1 1.2, b 0.75,
 * every phrase weighted alike): negative, lower is better, null for a document that misses a
 * phrase. Only comparable within the batch, like FTS5's own scores.
 */
export function scoreDocuments(texts: readonly string[], query: string): Array<number | null> {
  const phrases = parseFtsQuery(query);
  const docs = texts.map(tokenize);
  const average = docs.reduce((sum, doc) => sum + doc.length, 0) / Math.max(1, docs.length);
  return docs.map((doc) => {
    if (phrases.length === 0) return null;
    let score = 0;
    for (const phrase of phrases) {
      const tf = occurrences(doc, phrase);
      if (tf === 0) return null;
      score -= (tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * doc.length) / Math.max(1, average)));
    }
    return score;
  });
}
