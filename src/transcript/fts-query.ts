import { cjkBigrams, isCjk, splitCjk } from "./cjk-terms.js";

/**
 * Turns what a person typed into a safe FTS5 query: every term becomes a quoted phrase, so
 * quotes, operators (AND, NEAR, ^, :) and column filters in the input are just text. All terms
 * must match. Returns null when the input has no searchable word.
 *
 * Terms, as `searchTerms` returns them:
 * - a latin (non-CJK) word, folded like the index folds it; a `*` right after a word makes it a
 *   prefix (`deplo*` finds `deploy`), a `*` anywhere else is nothing;
 * - a run of CJK characters, kept in NFC: two or more become the phrase of their bigrams
 *   (`"第三 三季 季度"`, order and adjacency required), one becomes the prefix query `"東"*`, which
 *   the index (see `ftsDocument`) answers for the character in any place of its run.
 * A word mixing scripts (`deploy日志`) is cut into one term per script.
 */
const WORD = /[\p{L}\p{N}_]+\*?/gu;
const MAX_TERMS = 32;
/** Any character past ASCII: text without one needs no Unicode folding or classes. */
export const NON_ASCII = /[\u0080-\uffff]/;

export function searchTerms(input: string): string[] {
  const seen = new Set<string>();
  for (const word of input.normalize("NFC").match(WORD) ?? []) {
    const prefix = word.endsWith("*");
    const parts = splitCjk(prefix ? word.slice(0, -1) : word);
    for (const [index, part] of parts.entries()) {
      if (isCjk(part)) seen.add(part);
      else if (normalizeWord(part) !== "") {
        const star = prefix && index === parts.length - 1 ? "*" : "";
        seen.add(`${normalizeWord(part)}${star}`);
      }
      if (seen.size === MAX_TERMS) return [...seen];
    }
  }
  return [...seen];
}

export function toFtsQuery(input: string): string | null {
  const terms = searchTerms(input);
  return terms.length === 0 ? null : terms.map(ftsTerm).join(" ");
}

/** One term of `searchTerms` as an FTS5 query term. */
function ftsTerm(term: string): string {
  if (isCjk(term)) {
    const bigrams = cjkBigrams(term);
    return bigrams.length === 1 && Array.from(term).length === 1
      ? `"${term}"*`
      : `"${bigrams.join(" ")}"`;
  }
  return term.endsWith("*") ? `"${term.slice(0, -1)}"*` : `"${term}"`;
}

/** Lower case without diacritics, as the `unicode61 remove_diacritics 2` tokenizer folds words. */
export function normalizeWord(word: string): string {
  if (!NON_ASCII.test(word)) return word.toLowerCase();
  return word.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}
