import { describe, expect, it } from "vitest";
import {
  createStyle,
  formatTime,
  highlight,
  outputWidth,
  sanitize,
  shouldColor,
  truncate,
} from "./style.js";

describe("shouldColor", () => {
  it("colors a terminal unless NO_COLOR is set", () => {
    expect(shouldColor({ isTTY: true }, {})).toBe(true);
    expect(shouldColor({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(shouldColor({ isTTY: false }, {})).toBe(false);
    expect(shouldColor({}, {})).toBe(false);
  });

  it("uses the terminal's width, else 100", () => {
    expect(outputWidth({ isTTY: true, columns: 132 })).toBe(132);
    expect(outputWidth({ isTTY: false, columns: 132 })).toBe(100);
  });
});

describe("highlight", () => {
  const snippet = "…water the basil and the Basil";
  const ranges: Array<[number, number]> = [
    [11, 16],
    [25, 30],
  ];

  it("brackets matches without color", () => {
    expect(highlight(snippet, ranges, createStyle(false))).toBe(
      "…water the [basil] and the [Basil]",
    );
  });

  it("bolds matches with color", () => {
    expect(highlight(snippet, ranges, createStyle(true))).toBe(
      "…water the \u001b[1mbasil\u001b[22m and the \u001b[1mBasil\u001b[22m",
    );
  });

  it("ignores ranges that overlap or fall outside the text", () => {
    expect(
      highlight(
        "abc",
        [
          [0, 1],
          [0, 2],
          [2, 9],
        ],
        createStyle(false),
      ),
    ).toBe("[a]bc");
  });

  it("cleans control characters around and inside matches", () => {
    expect(highlight("a\u001bb", [[1, 2]], createStyle(false))).toBe("a[\ufffd]b");
  });
});

describe("text helpers", () => {
  it("sanitize keeps newlines and tabs, one replacement per control character", () => {
    expect(sanitize("a\tb\nc\u001b[0m\u009b\r")).toBe("a\tb\nc\ufffd[0m\ufffd\ufffd");
  });

  it("truncate counts code points and marks the cut", () => {
    expect(truncate("short", 10)).toBe("short");
    expect(truncate("🌿🌿🌿🌿", 3)).toBe("🌿🌿…");
    expect(truncate("abcdef", 4)).toBe("abc…");
  });

  it("formatTime prints UTC to the second, falling back to milliseconds", () => {
    expect(formatTime("2026-03-02T08:00:01.120Z")).toBe("2026-03-02 08:00:01");
    expect(formatTime(undefined, Date.parse("2026-03-05T12:00:00Z"))).toBe("2026-03-05 12:00:00");
    expect(formatTime("garbage")).toBe("-");
  });
});
