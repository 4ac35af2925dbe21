import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { cjkBigrams, ftsDocument, isCjk, splitCjk } from "./cjk-terms.js";
import { toFtsQuery } from "./fts-query.js";

// The table the agent schema declares, in memory: the oracle is FTS5 itself.
const db = openRawSqlite(":memory:");
db.exec(`CREATE VIRTUAL TABLE fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2')`);
const insert = db.prepare("INSERT INTO fts (rowid, text) VALUES (?, ?)");
const match = db.prepare("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid").pluck();
afterAll(() => db.close());

/** The rowids of `documents` that `query` finds, each indexed through `ftsDocument`. */
function matching(documents: readonly string[], query: string): number[] {
  db.exec("DELETE FROM fts");
  for (const [index, text] of documents.entries()) insert.run(index + 1, ftsDocument(text));
  const fts = toFtsQuery(query);
  return fts === null ? [] : (match.all(fts) as number[]);
}

const HAN = fc.constantFrom(..."支持的通道列表第三季度销售数据用中文回复我東京天気"); // few chars: repeats
const KANA = fc.constantFrom(..."のはがガｶﾞーッ々〆〇");
const HANGUL = fc.constantFrom(..."서울날씨가좋네요가");
const cjkString = fc
  .array(fc.oneof(HAN, KANA, HANGUL), { minLength: 2, maxLength: 24 })
  // Composed, as text is indexed: a substring must not start inside a decomposed syllable.
  .map((chars) => chars.join("").normalize("NFC"))
  // Composing can join two generated jamo into one syllable: keep the two-character minimum.
  .filter((text) => Array.from(text).length >= 2);

describe("ftsDocument", () => {
  it("turns every CJK run into its bigrams and its last character, leaving other text alone", () => {
    expect(ftsDocument("用中文回复我")).toBe("用中 中文 文回 回复 复我 我");
    expect(ftsDocument("東京の天気は？")).toBe("東京 京の の天 天気 気は は ？");
    expect(ftsDocument("서울 날씨가 좋네요")).toBe("서울 울 날씨 씨가 가 좋네 네요 요");
    expect(ftsDocument("run deploy.sh 中 ok")).toBe("run deploy.sh 中 ok");
    expect(ftsDocument("abc東京def")).toBe("abc 東京 京 def");
    expect(ftsDocument("Crème brûlée")).toBe("Crème brûlée");
    expect(ftsDocument("")).toBe("");
  });

  it("composes decomposed kana and Hangul first", () => {
    expect(ftsDocument("か\u3099")).toBe("が");
    expect(ftsDocument("날씨".normalize("NFD"))).toBe("날씨 씨");
  });

  it("knows the CJK scripts from their punctuation and from other letters", () => {
    for (const char of [..."中㐀𠀀豈々〆〇ひカーｶﾞｰ한ᄀㄱ"]) expect(isCjk(char), char).toBe(true);
    for (const char of [..."、。「」？！ａA1éд٣ 🌿"]) expect(isCjk(char), char).toBe(false);
    expect(cjkBigrams("𠀀𠀁𠀂")).toEqual(["𠀀𠀁", "𠀁𠀂"]);
    expect(cjkBigrams("中")).toEqual(["中"]);
    expect(splitCjk("deploy日志x")).toEqual(["deploy", "日志", "x"]);
  });
});

describe("ftsDocument and toFtsQuery through FTS5", () => {
  it("find every substring of two or more characters of a CJK text", () => {
    fc.assert(
      fc.property(cjkString, fc.nat(), fc.nat(), (text, a, b) => {
        const chars = Array.from(text);
        const from = a % (chars.length - 1);
        const to = from + 2 + (b % (chars.length - from - 1));
        const query = chars.slice(from, to).join("");
        expect(matching([text], query), query).toEqual([1]);
      }),
      { numRuns: 300 },
    );
  });

  it("find a text exactly when it holds the query, checked against String.includes", () => {
    fc.assert(
      fc.property(fc.array(cjkString, { minLength: 1, maxLength: 6 }), cjkString, (texts, q) => {
        const query = Array.from(q).slice(0, 3).join("");
        const expected = texts.flatMap((text, index) => (text.includes(query) ? [index + 1] : []));
        expect(matching(texts, query), query).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("find one character in any place of its run", () => {
    const texts = ["東京", "京都", "北京大学", "東"];
    expect(matching(texts, "京")).toEqual([1, 2, 3]);
    expect(matching(texts, "東")).toEqual([1, 4]);
    expect(matching(texts, "学")).toEqual([3]);
  });

  it("do not match across punctuation or across two runs", () => {
    expect(matching(["数据，分析", "数据 分析", "数据分析"], "据分")).toEqual([3]);
  });
});
