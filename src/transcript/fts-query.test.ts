import { describe, expect, it } from "vitest";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { ftsDocument } from "./cjk-terms.js";
import { searchTerms, toFtsQuery } from "./fts-query.js";

describe("searchTerms and toFtsQuery", () => {
  it("quote every word, fold it, and drop operators", () => {
    expect(toFtsQuery('Crème "brûlée" AND NEAR(x) col:y')).toBe(
      '"creme" "brulee" "and" "near" "x" "col" "y"',
    );
    expect(toFtsQuery("*  ^ () - \u0000")).toBeNull();
    expect(searchTerms("a A á")).toEqual(["a"]);
  });

  it("turn a CJK run into the phrase of its bigrams and one character into a prefix", () => {
    expect(toFtsQuery("第三季度")).toBe('"第三 三季 季度"');
    expect(toFtsQuery("支持")).toBe('"支持"');
    expect(toFtsQuery("東")).toBe('"東"*');
    expect(toFtsQuery("东京 天気")).toBe('"东京" "天気"');
  });

  it("cut a word at each change between CJK and other letters", () => {
    expect(searchTerms("deploy日志Failed")).toEqual(["deploy", "日志", "failed"]);
    expect(toFtsQuery("deploy日志")).toBe('"deploy" "日志"');
  });

  it("keep CJK text composed, so Korean does not fall apart into jamo", () => {
    expect(searchTerms("날씨".normalize("NFD"))).toEqual(["날씨"]);
    expect(toFtsQuery("か\u3099")).toBe('"が"*');
  });

  it("make a word ending in * a prefix, and nothing else", () => {
    expect(toFtsQuery("deplo*")).toBe('"deplo"*');
    expect(toFtsQuery("DÉPLO* x")).toBe('"deplo"* "x"');
    expect(toFtsQuery("* deplo *x")).toBe('"deplo" "x"');
    expect(toFtsQuery("日志*")).toBe('"日志"');
    expect(toFtsQuery("run日*")).toBe('"run" "日"*');
    expect(toFtsQuery("ab**")).toBe('"ab"*');
  });

  it("are answered by FTS5 as intended", () => {
    const db = openRawSqlite(":memory:");
    db.exec(
      `CREATE VIRTUAL TABLE fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');`,
    );
    const texts = ["deployment failed", "déploy 日志", "de ploy", "日志ファイル"];
    const insert = db.prepare("INSERT INTO fts (rowid, text) VALUES (?, ?)");
    for (const [index, text] of texts.entries()) insert.run(index + 1, ftsDocument(text));
    const find = (query: string) =>
      db
        .prepare("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid")
        .pluck()
        .all(toFtsQuery(query));
    expect(find("deplo*")).toEqual([1, 2]);
    expect(find("deploy")).toEqual([2]);
    expect(find("日志")).toEqual([2, 4]);
    expect(find("日志 deploy*")).toEqual([2]);
    expect(find("ファイル")).toEqual([4]);
    db.close();
  });
});
