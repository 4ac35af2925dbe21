import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { cleanCell, fetchPage, largerLimit, renderTable, shellArg } from "./output.js";

describe("renderTable", () => {
  const rows = [{ name: "a\tb\nc \u001b[31mred\u001b[0m", note: "x".repeat(12) }];
  const columns = [
    { header: "NAME", value: (r: (typeof rows)[0]) => r.name },
    { header: "NOTE", value: (r: (typeof rows)[0]) => r.note, max: 5 },
  ];

  it("keeps a row on one line and cuts a column at its max with …", () => {
    expect(renderTable(rows, columns)).toBe("NAME       NOTE\na b c red  xxxx…");
  });

  it("shows every cell whole with full", () => {
    expect(renderTable(rows, columns, { full: true })).toBe(
      `NAME       NOTE\na b c red  ${"x".repeat(12)}`,
    );
  });

  it("cleanCell replaces lone control characters", () => {
    expect(cleanCell("a\u0007b")).toBe("a\ufffdb");
  });
});

describe("paging helpers", () => {
  it("fetchPage asks for one row more than the page, within the store's maximum", () => {
    const asked: number[] = [];
    const fetch = (count: number) => {
      asked.push(count);
      return Array.from({ length: Math.min(count, 7) }, (_, i) => i);
    };
    expect(fetchPage(5, 100, fetch)).toEqual({ rows: [0, 1, 2, 3, 4], more: true });
    expect(fetchPage(7, 100, fetch)).toEqual({ rows: [0, 1, 2, 3, 4, 5, 6], more: false });
    expect(fetchPage(7, 7, fetch).more).toBe(false);
    expect(asked).toEqual([6, 8, 7]);
  });

  it("largerLimit doubles up to the maximum", () => {
    expect(largerLimit(20, 100)).toBe("--limit 40");
    expect(largerLimit(60, 100)).toBe("--limit 100");
    expect(largerLimit(100, 100)).toBeNull();
  });

  it("shellArg gives back the same text through a real shell", () => {
    for (const text of ["plain-key_1.x", "a b", "it's", "$HOME `x`", "tab\there\nline", "\\"]) {
      const echoed = spawnSync("bash", ["-c", `printf %s ${shellArg(text)}`], { encoding: "utf8" });
      expect(echoed.stdout).toBe(text);
    }
    expect(shellArg("plain-key_1.x")).toBe("plain-key_1.x");
  });
});
