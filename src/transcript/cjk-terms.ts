/**
 * Chinese, Japanese and Korean text for the `unicode61` full-text index. unicode61 splits words at
 * spaces and punctuation, and these scripts put no spaces between words: a whole sentence would
 * be one token that no word inside it matches. Both the indexed text and the query are therefore
 * cut into overlapping two-character pieces (bigrams), which a stock `sqlite3` shell still reads.
 *
 * A CJK character is a letter (or letter number, 〇) of the Han, Hiragana, Katakana or Hangul
 * script, by Unicode Script_Extensions: CJK ideographs with every extension and the compatibility
 * block, 々 and 〆, the kana with the prolonged sound mark ー, halfwidth katakana with its
 * halfwidth voicing marks, Hangul syllables and jamo (halfwidth and compatibility forms too).
 * Punctuation of these scripts (、。「」？) is not: unicode61 already splits there.
 */
const CJK = String.raw`(?:(?=[\p{L}\p{Nl}])[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}])`;
const CJK_CHAR = new RegExp(`^${CJK}`, "u");
const CJK_RUN = new RegExp(`${CJK}+`, "gu");

/**
 * Cheap tests run first on every indexed text: the exact script classes above cost about a
 * microsecond per text, most texts have no CJK at all, and ASCII is already in NFC. MAYBE_CJK
 * covers every block the scripts use (a superset: the exact test follows).
 */
const MAYBE_NOT_NFC_OR_CJK = /[\u0080-\uffff]/;
const MAYBE_CJK =
  /[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef]|[\ud840-\ud8bf][\udc00-\udfff]|\ud82c[\udc00-\udcff]/;

/** Whether `text` starts with a CJK character. */
export function isCjk(text: string): boolean {
  return CJK_CHAR.test(text);
}

/** The overlapping two-character pieces of a CJK run; a single character is its own piece. */
export function cjkBigrams(run: string): string[] {
  const chars = Array.from(run);
  if (chars.length < 2) return chars;
  return chars.slice(1).map((char, index) => `${chars[index]}${char}`);
}

/**
 * The text given to FTS5 for `text`: every CJK run becomes its bigrams and then its last
 * character alone, so that a one-character query (a prefix query) finds the character wherever
 * it sits in its run, last place included. Other text is unchanged, except that the whole text
 * is put in NFC, so that decomposed kana and Hangul (as macOS writes them) index like composed
 * ones. A run is set off by spaces from the text it touches, which would otherwise join it into
 * one token.
 */
export function ftsDocument(text: string): string {
  if (!MAYBE_NOT_NFC_OR_CJK.test(text)) return text;
  const composed = text.normalize("NFC");
  if (!MAYBE_CJK.test(composed)) return composed;
  return composed.replace(CJK_RUN, (run, offset: number, whole: string) => {
    const pieces = cjkBigrams(run);
    const chars = Array.from(run);
    if (chars.length > 1) pieces.push(chars[chars.length - 1] as string);
    const before = offset > 0 && !/\s/.test(whole[offset - 1] ?? "") ? " " : "";
    const after =
      offset + run.length < whole.length && !/\s/.test(whole[offset + run.length] ?? "") ? " " : "";
    return `${before}${pieces.join(" ")}${after}`;
  });
}

/** `word` cut where it changes between CJK and other characters, in order. */
export function splitCjk(word: string): string[] {
  if (!MAYBE_CJK.test(word)) return [word];
  const parts: string[] = [];
  let last = 0;
  for (const match of word.matchAll(CJK_RUN)) {
    if (match.index > last) parts.push(word.slice(last, match.index));
    parts.push(match[0]);
    last = match.index + match[0].length;
  }
  if (last < word.length) parts.push(word.slice(last));
  return parts;
}
