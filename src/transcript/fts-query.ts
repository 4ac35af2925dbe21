/**
 * Turns what a person typed into a safe FTS5 query: every word becomes a quoted phrase term, so
 * quotes, operators (AND, NEAR, *, ^, :) and column filters in the input are just text. All terms
 * must match. Returns null when the input has no searchable word.
 */
const WORD = /[\p{L}\p{N}_]+/gu;
const MAX_TERMS = 32;

export function searchTerms(input: string): string[] {
  const words = input.match(WORD) ?? [];
  const seen = new Set<string>();
  for (const word of words) {
    const term = normalizeWord(word);
    if (term !== "") seen.add(term);
    if (seen.size === MAX_TERMS) break;
  }
  return [...seen];
}

export function toFtsQuery(input: string): string | null {
  const terms = searchTerms(input);
  return terms.length === 0 ? null : terms.map((term) => `"${term}"`).join(" ");
}

/** Lower case without diacritics, as the `unicode61 remove_diacritics 2` tokenizer folds words. */
export function normalizeWord(word: string): string {
  return word.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}
