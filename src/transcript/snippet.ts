import { normalizeWord } from "./fts-query.js";

export interface Snippet {
  text: string;
  /** [start, end) offsets in `text` of each matched word. */
  highlights: Array<[number, number]>;
}

const WORD = /[\p{L}\p{N}_]+/gu;

/**
 * A window of `text` around the first word that matches a search term, with the offsets of every
 * matched word inside the window. Cut here rather than by FTS5's snippet(): the index is
 * contentless, so the text is read once from the event itself.
 */
export function makeSnippet(text: string, terms: readonly string[], width = 160): Snippet {
  const wanted = new Set(terms);
  const matches: Array<[number, number]> = [];
  for (const match of text.matchAll(WORD)) {
    if (wanted.has(normalizeWord(match[0])))
      matches.push([match.index, match.index + match[0].length]);
  }
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
