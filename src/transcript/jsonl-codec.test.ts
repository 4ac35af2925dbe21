import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import type { TranscriptEvent } from "./event.js";
import { encodeEvent, encodeJsonl, parseJsonl, parseJsonlLine } from "./jsonl-codec.js";

const HEADER =
  '{"type":"session","version":3,"id":"0b1e","timestamp":"2026-01-31T11:07:47.906Z","cwd":"C:\\\\Users\\\\a"}';
const INJECTED =
  '{"type":"message","id":"e93205c2","timestamp":"2026-02-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"héllo ✓ 🙂"}],"stopReason":"injected"}}';

function errorOf(text: string, line = 1): string {
  const parsed = parseJsonlLine(text, line);
  if (parsed === null || parsed.ok) throw new Error(`expected a failure for ${text}`);
  return parsed.error;
}

describe("parseJsonlLine", () => {
  it("parses a record and keeps unknown keys in order", () => {
    const parsed = parseJsonlLine(HEADER, 1);
    expect(parsed).toEqual({ ok: true, line: 1, event: JSON.parse(HEADER) });
    if (parsed?.ok)
      expect(Object.keys(parsed.event)).toEqual(["type", "version", "id", "timestamp", "cwd"]);
  });

  it("returns null for blank lines", () => {
    for (const blank of ["", "   ", "\t", "\r", " \r"]) expect(parseJsonlLine(blank, 3)).toBeNull();
  });

  it("strips CRLF and a BOM on line 1 only", () => {
    expect(parseJsonlLine(`${HEADER}\r`, 2)).toMatchObject({ ok: true });
    expect(parseJsonlLine(`\uFEFF${HEADER}`, 1)).toMatchObject({ ok: true });
    expect(errorOf(`\uFEFF${HEADER}`, 2)).toMatch(/byte order mark/);
  });

  it("explains what is wrong with a line and keeps it raw", () => {
    expect(parseJsonlLine('{"type":', 7)).toMatchObject({ ok: false, line: 7, raw: '{"type":' });
    expect(errorOf('{"type":')).toMatch(/^invalid JSON: /);
    expect(errorOf("[1]")).toBe("expected a JSON object, got an array");
    expect(errorOf("null")).toBe("expected a JSON object, got null");
    expect(errorOf('"x"')).toBe("expected a JSON object, got a string");
    expect(errorOf('{"id":"a"}')).toBe('missing "type"');
    expect(errorOf('{"type":1,"id":"a"}')).toBe('"type" must be a string, got a number');
    expect(errorOf('{"type":"message"}')).toBe('missing "id"');
    expect(errorOf('{"type":"session","id":null}')).toBe('"id" must be a string, got null');
    expect(errorOf('{"type":"m","id":"a","parentId":5}')).toBe(
      '"parentId" must be a string or null, got a number',
    );
  });

  it("accepts a missing timestamp without inventing one", () => {
    const parsed = parseJsonlLine('{"type":"custom","id":"a"}', 1);
    expect(parsed).toEqual({ ok: true, line: 1, event: { type: "custom", id: "a" } });
  });
});

describe("parseJsonl", () => {
  it("numbers lines from 1, skips blank lines and reads an unterminated last line", () => {
    const results = parseJsonl(`${HEADER}\n\n${INJECTED}`);
    expect(results.map((r) => [r.ok, r.line])).toEqual([
      [true, 1],
      [true, 3],
    ]);
    expect(parseJsonl("")).toEqual([]);
    expect(parseJsonl("\n\n")).toEqual([]);
  });

  it("flags a cut-off last line as a possible truncation", () => {
    const [, last] = parseJsonl(`${HEADER}\n{"type":"mess`);
    expect(last).toMatchObject({ ok: false, line: 2 });
    if (last?.ok === false) expect(last.error).toMatch(/no trailing newline/);
  });

  it("handles CRLF files", () => {
    const results = parseJsonl(`${HEADER}\r\n${INJECTED}\r\n`);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(results).toHaveLength(2);
  });
});

describe("encodeJsonl", () => {
  it("writes compact lines, each ending in a newline, and nothing for no events", () => {
    expect(encodeJsonl([])).toBe("");
    const events = parseJsonl(`${HEADER}\n${INJECTED}\n`).flatMap((r) => (r.ok ? [r.event] : []));
    expect(encodeJsonl(events)).toBe(`${HEADER}\n${INJECTED}\n`);
  });

  it("refuses what JSON cannot carry", () => {
    const bad = { type: "custom", id: "a", timestamp: "t", data: 1n } as TranscriptEvent;
    expect(() => encodeEvent(bad)).toThrow(expect.objectContaining({ code: "E_INVALID_ARGUMENT" }));
    const cyclic: TranscriptEvent = { type: "custom", id: "a", timestamp: "t" };
    cyclic.self = cyclic;
    try {
      encodeEvent(cyclic);
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
    }
  });

  // Spellings that JSON.parse accepts but JSON.stringify writes differently. None occurs in the
  // real corpus (corpus.test.ts proves it byte for byte); an export of such a line is
  // value-equal, not byte-equal, to its source.
  it.each([
    ['{"type":"m","id":"a","n":1.0}', '{"type":"m","id":"a","n":1}'],
    ['{"type":"m","id":"a","n":1e3}', '{"type":"m","id":"a","n":1000}'],
    ['{"type":"m","id":"a","n":-0}', '{"type":"m","id":"a","n":0}'],
    ['{"type":"m","id":"a","s":"\\u00e9\\/"}', '{"type":"m","id":"a","s":"é/"}'],
    ['{"type":"m", "id":"a"}', '{"type":"m","id":"a"}'],
    ['{"type":"m","id":"a","b":1,"7":2}', '{"7":2,"type":"m","id":"a","b":1}'],
    ['{"type":"m","id":"a","k":1,"k":2}', '{"type":"m","id":"a","k":2}'],
    [
      '{"type":"m","id":"a","n":12345678901234567890}',
      '{"type":"m","id":"a","n":12345678901234567000}',
    ],
  ])("normalises %s", (source, exported) => {
    const parsed = parseJsonlLine(source, 1);
    expect(parsed?.ok && encodeEvent(parsed.event)).toBe(exported);
  });
});

const key = fc.string({ unit: "binary", maxLength: 8 });
const text = fc.string({ unit: "binary", maxLength: 20 });
// -0 is the one value fc.jsonValue makes that JSON text cannot carry (it is written as 0).
const jsonText = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const eventArb: fc.Arbitrary<TranscriptEvent> = fc
  .record({
    required: fc.tuple(text, text, text),
    parent: fc.oneof(fc.constant(undefined), fc.constant(null), text),
    extras: fc.dictionary(key, jsonText, { maxKeys: 5 }),
    seed: fc.nat(),
  })
  .map(({ required: [type, id, timestamp], parent, extras, seed }) => {
    const fixed: [string, unknown][] = [
      ["type", type],
      ["id", id],
      ["timestamp", timestamp],
    ];
    if (parent !== undefined) fixed.push(["parentId", parent]);
    const names = new Set(fixed.map(([k]) => k));
    const entries = [...fixed, ...Object.entries(extras).filter(([k]) => !names.has(k))];
    // Rotate so the required keys are not always first: key order must survive wherever they sit.
    const shift = seed % entries.length;
    return Object.fromEntries([
      ...entries.slice(shift),
      ...entries.slice(0, shift),
    ]) as TranscriptEvent;
  });

describe("codec properties", () => {
  it("parseJsonl(encodeJsonl(events)) gives back the same events, keys in the same order", () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 8 }), (events) => {
        const text = encodeJsonl(events);
        const parsed = parseJsonl(text);
        expect(parsed.every((r) => r.ok)).toBe(true);
        const back = parsed.flatMap((r) => (r.ok ? [r.event] : []));
        expect(back).toEqual(events);
        expect(back.map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)));
        expect(encodeJsonl(back)).toBe(text);
        expect(text.split("\n")).toHaveLength(events.length + 1);
      }),
    );
  });

  it("never throws on arbitrary text and reports every non-blank line", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (input) => {
        const results = parseJsonl(input);
        const nonBlank = input.split("\n").filter((l) => l.trim() !== "");
        expect(results).toHaveLength(nonBlank.length);
        const lines = results.map((r) => r.line);
        expect(lines).toEqual([...lines].sort((a, b) => a - b));
      }),
    );
  });
});
