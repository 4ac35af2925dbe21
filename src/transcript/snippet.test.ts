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
});
