import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { readJsonLines, readLines, type SourceLine } from "./line-reader.js";

const dir = mkdtempSync(join(tmpdir(), "agentstate-lines-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The lines of `bytes` as the reader's contract describes them, computed on the whole buffer at
 * once (no chunks): split at "\n", a BOM dropped from line 1, one trailing CR dropped, invalid
 * UTF-8 and over-long lines reported, a last line without "\n" still a line.
 */
function model(bytes: Buffer, maxLineBytes: number): SourceLine[] {
  const lines: SourceLine[] = [];
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let start = 0;
  for (let line = 1; start < bytes.length; line++) {
    const nl = bytes.indexOf(0x0a, start);
    const end = nl === -1 ? bytes.length : nl;
    const raw = bytes.subarray(start, end);
    start = end + 1;
    if (raw.length > maxLineBytes) {
      lines.push({ line, error: `line is over ${maxLineBytes} bytes`, bytes: raw.length });
      continue;
    }
    let body = raw;
    if (line === 1 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) {
      body = body.subarray(3);
    }
    if (body.at(-1) === 0x0d) body = body.subarray(0, -1);
    try {
      lines.push({ line, text: decoder.decode(body), bytes: raw.length });
    } catch {
      lines.push({ line, error: "invalid UTF-8", bytes: raw.length });
    }
  }
  return lines;
}

/** Pieces a line is made of: text, CRs, a BOM, a byte that is never UTF-8, long runs. */
const piece = fc.oneof(
  fc.string({ maxLength: 40 }).map((text) => Buffer.from(text.replaceAll("\n", " "))),
  fc.constantFrom(Buffer.from("\r"), Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from([0xff])),
  fc.integer({ min: 1, max: 90_000 }).map((n) => Buffer.alloc(n, "x")),
  fc.constant(Buffer.from("é")),
);
const line = fc.array(piece, { maxLength: 4 }).map((pieces) => Buffer.concat(pieces));
const file = fc
  .tuple(fc.array(line, { maxLength: 12 }), fc.boolean())
  .map(([lines, ends]) =>
    Buffer.concat(
      lines.flatMap((l, i) => (i < lines.length - 1 || ends ? [l, Buffer.from("\n")] : [l])),
    ),
  );

describe("readLines", () => {
  it("gives the lines of the whole file, whatever falls on a 64 KiB chunk boundary", () => {
    let n = 0;
    fc.assert(
      fc.property(file, fc.constantFrom(32 * 1024 * 1024, 70_000, 100), (bytes, max) => {
        const path = join(dir, `f${n++}.jsonl`);
        writeFileSync(path, bytes);
        expect([...readLines(path, max)]).toEqual(model(bytes, max));
        rmSync(path);
      }),
      { seed: 23, numRuns: 150 },
    );
  });

  it("decodes a multi-byte character split by a chunk boundary", () => {
    const path = join(dir, "split.jsonl");
    // "é" is two bytes: the first ends the first 64 KiB chunk, the second starts the next.
    const bytes = Buffer.concat([Buffer.alloc(64 * 1024 - 1, "a"), Buffer.from("é\nb\n")]);
    writeFileSync(path, bytes);
    const lines = [...readLines(path)];
    expect(lines.map((l) => ("text" in l ? l.text.slice(-2) : l.error))).toEqual(["aé", "b"]);
  });
});

describe("readJsonLines", () => {
  it("refuses a line nested past 1,000 levels by name, and only such a line", () => {
    const nest = (depth: number, inner = "") => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`;
    const lines = [
      nest(1000), // exactly at the limit: 2,000 characters
      nest(1001), // one level past it: the shortest text that is too deep
      nest(1001, '"x"'),
      `{"a":${nest(5, JSON.stringify("y".repeat(5000)))}}`, // long but shallow
      JSON.stringify({ deep: JSON.parse(nest(999)) }), // 1,000 levels under an object
      JSON.stringify({ deep: JSON.parse(nest(1000)) }),
    ];
    const path = join(dir, "deep.jsonl");
    writeFileSync(path, `${lines.join("\n")}\n`);
    const read = [...readJsonLines(path)];
    const refused = read.filter((r) => "error" in r).map((r) => r.line);
    // The oracle: depth counted on the text, by brackets outside strings.
    const depthOf = (text: string) => {
      let depth = 0;
      let most = 0;
      let inString = false;
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (inString) {
          if (c === "\\") i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === "[" || c === "{") most = Math.max(most, ++depth);
        else if (c === "]" || c === "}") depth--;
      }
      return most;
    };
    const expected = lines.flatMap((text, i) => (depthOf(text) > 1000 ? [i + 1] : []));
    expect(expected).toEqual([2, 3, 6]);
    expect(refused).toEqual(expected);
    for (const r of read) {
      if ("error" in r) expect(r.error).toBe("JSON nested deeper than 1000 levels");
    }
  });
});
