import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFtsAverages, mayHold, requiredTokens, tokenize } from "./pending-match.js";

const WORDS = [
  "basil",
  "Basil",
  "café",
  "cafe",
  "naïve",
  "x_1",
  "2026",
  "東京",
  'say "hi"',
  "tab\there",
];
const text = fc
  .tuple(
    fc.array(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 6 })), { maxLength: 10 }),
    fc.constantFrom(" ", "\n", "-", ""),
  )
  .map(([parts, separator]) => parts.join(separator));

describe("pending-match", () => {
  it("never rules out a text or an event's JSON that holds every token", () => {
    let held = 0;
    fc.assert(
      fc.property(text, fc.constantFrom(...WORDS, "cafe naive", "basil 2026"), (t, words) => {
        const tokens = requiredTokens(
          words
            .split(" ")
            .map((w) => `"${w}"`)
            .join(" "),
        );
        const has = new Set(tokenize(t));
        if (!tokens.every((token) => has.has(token))) return;
        held++;
        expect(mayHold(t, tokens)).toBe(true);
        expect(mayHold(JSON.stringify({ message: { content: [{ text: t }] } }), tokens)).toBe(true);
      }),
      { numRuns: 2000 },
    );
    expect(held).toBeGreaterThan(200);
    // An escaped character could be any letter: such JSON is never ruled out.
    expect(mayHold('{"text":"caf\\u00e9"}', ["cafe"])).toBe(true);
    expect(mayHold('{"text":"tomato"}', ["basil"])).toBe(false);
  });

  it("reads FTS5's averages record: the row count, then each column's tokens", () => {
    // SQLite varints: 200,000 = 0x8C 0x9A 0x40; 5,572,793 = 0x82 0xD4 0x91 0x39.
    const block = Uint8Array.from([0x8c, 0x9a, 0x40, 0x82, 0xd4, 0x91, 0x39]);
    expect(decodeFtsAverages(block)).toEqual({ rows: 200_000, tokens: [5_572_793] });
  });
});
