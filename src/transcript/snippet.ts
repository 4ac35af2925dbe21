import { isCjk, splitCjk } from "./cjk-terms.js";
import { NON_ASCII, normalizeWord } from "./fts-query.js";

export interface Snippet {
  text: string;
  /** [start, end) offsets in `text` of each matched word or CJK substring, in order. */
  highlights: Array<[number, number]>;
}

const WORD = /[\p{L}\p{N}_]+/gu;

/**
 * A window of `text` around the first match of a search term (as `searchTerms` returns them),
 * with the offsets of every match inside the window. A latin term matches a whole word (or, ending
 * in `*`, the start of one); a CJK term matches where its characters stand in a row, as the
 * bigram phrase does in the index. Cut here rather than by FTS5's snippet(): the index is
 * contentless, so the text is read once from the event itself.
 */
export function makeSnippet(text: string, terms: readonly string[], width = 160): Snippet {
  const matches = findMatches(text, terms, width);
  const first = matches[0]?.[0] ?? 0;
  let start = Math.max(0, first - Math.floor(width / 3));
  const end = Math.min(text.length, start + width);
  start = Math.max(0, Math.min(start, end - width));
  const prefix = start > 0 ? "…" : "";
  const suffix = end < text.length ? "…" : "";
  const body = text.slice(start, end).replace(/\s/g, " ");
  const highlights = matches
    .filter(([from, to]) => from >= start && to <= end)
    .map(([from, to]): [number, number] => [
      from - start + prefix.length,
      to - start + prefix.length,
    ]);
  return { text: `${prefix}${body}${suffix}`, highlights };
}

/**
 * The matches of `terms` in `text` that can fall in the window (up to `width` past the first),
 * sorted, overlapping ones merged into one range: the words past it are not scanned.
 */
function findMatches(
  text: string,
  terms: readonly string[],
  width: number,
): Array<[number, number]> {
  const ascii = asciiWordPattern(text, terms);
  if (ascii !== undefined) return mergeRanges(asciiMatches(text, ascii, width));
  const words = new Set(terms.filter((term) => !isCjk(term) && !term.endsWith("*")));
  const prefixes = terms.filter((term) => term.endsWith("*")).map((term) => term.slice(0, -1));
  const matches: Array<[number, number]> = [];
  for (const term of terms.filter(isCjk)) {
    for (let at = text.indexOf(term); at >= 0; at = text.indexOf(term, at + 1))
      matches.push([at, at + term.length]);
  }
  let scanUntil = Math.min(...matches.map(([from]) => from)) + width;
  for (const match of text.matchAll(WORD)) {
    if (match.index >= scanUntil) break;
    let offset = match.index;
    for (const part of splitCjk(match[0])) {
      const word = normalizeWord(part);
      if (!isCjk(part) && (words.has(word) || prefixes.some((p) => word.startsWith(p)))) {
        matches.push([offset, offset + part.length]);
        scanUntil = Math.min(scanUntil, offset + width);
      }
      offset += part.length;
    }
  }
  return mergeRanges(matches);
}

const ASCII_TERM = /^[a-z0-9_]+\*?$/;
/** The expression of each terms array a search passes to its snippets (null: none applies). */
const patterns = new WeakMap<readonly string[], RegExp | null>();

/**
 * For ASCII text and ASCII terms, one expression that matches exactly the words the general scan
 * would: a whole word equal to a term or starting with a prefix, in any case. A search cuts up to
 * 20 snippets with the same terms, and this runs about three times faster than cutting every word
 * by its Unicode classes. Undefined when the general scan is needed.
 */
function asciiWordPattern(text: string, terms: readonly string[]): RegExp | undefined {
  if (NON_ASCII.test(text)) return undefined;
  let pattern = patterns.get(terms);
  if (pattern === undefined) {
    const ascii = terms.length > 0 && terms.every((term) => ASCII_TERM.test(term));
    const choices = terms.map((term) => (term.endsWith("*") ? `${term.slice(0, -1)}\\w*` : term));
    pattern = ascii ? new RegExp(`(?<!\\w)(?:${choices.join("|")})(?!\\w)`, "gi") : null;
    patterns.set(terms, pattern);
  }
  return pattern ?? undefined;
}

function asciiMatches(text: string, pattern: RegExp, width: number): Array<[number, number]> {
  const matches: Array<[number, number]> = [];
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const first = matches[0];
    if (first !== undefined && match.index >= first[0] + width) break;
    matches.push([match.index, match.index + match[0].length]);
  }
  return matches;
}

function mergeRanges(ranges: Array<[number, number]>): Array<[number, number]> {
  const merged: Array<[number, number]> = [];
  for (const [from, to] of ranges.sort((a, b) => a[0] - b[0] || a[1] - b[1])) {
    const last = merged.at(-1);
    if (last !== undefined && from < last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}
