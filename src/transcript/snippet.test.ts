import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { searchTerms } from "./fts-query.js";
import { makeSnippet } from "./snippet.js";

function marked(text: string, query: string, width?: number): string[] {
  const snippet = makeSnippet(text, searchTerms(query), width);
  return snippet.highlights.map(([from, to]) => snippet.text.slice(from, to));
}

describe("makeSnippet", () => {
  it("highlights whole latin words, folded", () => {
    expect(marked("The Café opened; cafeteria closed", "cafe")).toEqual(["Café"]);
  });

  it("highlights the words a prefix starts", () => {
    expect(marked("deploy, redeploy, deployment", "deplo*")).toEqual(["deploy", "deployment"]);
  });

  it("highlights the matched CJK characters as one range each", () => {
    expect(marked("我们的第三季度销售数据很好", "销售数据")).toEqual(["销售数据"]);
    expect(marked("東京の天気は？東京タワー", "東京")).toEqual(["東京", "東京"]);
    expect(marked("서울 날씨가 좋네요", "날씨")).toEqual(["날씨"]);
    expect(marked("请把deploy日志发给我", "日志 deploy")).toEqual(["deploy", "日志"]);
  });

  it("merges overlapping occurrences into one range", () => {
    expect(marked("哈哈哈 好", "哈哈")).toEqual(["哈哈哈"]);
  });

  it("centres the window on the first match, offsets counted in the cut text", () => {
    const text = `${"前".repeat(300)}关键词${"后".repeat(300)}`;
    const snippet = makeSnippet(text, searchTerms("关键词"), 60);
    expect(snippet.text.startsWith("…")).toBe(true);
    expect(snippet.text.endsWith("…")).toBe(true);
    const [from, to] = snippet.highlights[0] ?? [0, 0];
    expect(snippet.text.slice(from, to)).toBe("关键词");
  });

  it("highlights every matching latin word inside the window, and nothing else", () => {
    // A model of the rule, independent of the scan: the window is cut around the first matching
    // word; every whole word in it that equals a term (or starts with a prefix term), folded, is
    // highlighted. Texts are mostly ASCII, some with accented letters (the general scan).
    const fold = (word: string) => word.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
    const vocabulary = ["deploy", "Deploy", "DEPLOYED", "café", "cafe", "log_file", "a1", "x", "é"];
    const text = fc
      .array(fc.oneof(fc.constantFrom(...vocabulary), fc.constantFrom(" ", ", ", "-", "\n", ".")), {
        maxLength: 120,
      })
      .map((parts) => parts.join(""));
    const query = fc
      .array(fc.constantFrom("deploy", "deplo*", "cafe", "log_file", "log*", "a1", "x", "e"), {
        minLength: 1,
        maxLength: 3,
      })
      .map((terms) => terms.join(" "));
    fc.assert(
      fc.property(text, query, fc.integer({ min: 8, max: 80 }), (source, typed, width) => {
        const terms = searchTerms(typed);
        const matches = (word: string) =>
          terms.some((term) =>
            term.endsWith("*") ? fold(word).startsWith(term.slice(0, -1)) : fold(word) === term,
          );
        const words = [...source.matchAll(/[\p{L}\p{N}_]+/gu)].filter((m) => matches(m[0]));
        const first = words[0]?.index ?? 0;
        let start = Math.max(0, first - Math.floor(width / 3));
        const end = Math.min(source.length, start + width);
        start = Math.max(0, Math.min(start, end - width));
        const expected = words
          .filter((m) => m.index >= start && m.index + m[0].length <= end)
          .map((m) => m[0]);
        expect(marked(source, typed, width)).toEqual(expected);
      }),
      { seed: 21, numRuns: 400 },
    );
  });
});
