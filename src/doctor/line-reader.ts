import { closeSync, readSync } from "node:fs";
import { MAX_JSON_DEPTH, nestedDeeperThan, openLegacyFile } from "./legacy-file.js";

/** A line longer than this is reported as a problem instead of being held in memory. */
export const MAX_LINE_BYTES = 32 * 1024 * 1024;
// Small enough that scanning hundreds of files leaves little garbage behind, big enough for fast reads.
const CHUNK_BYTES = 64 * 1024;
const BOM = [0xef, 0xbb, 0xbf];

export type SourceLine =
  | { line: number; text: string; bytes: number }
  | { line: number; error: string; bytes: number };

const decoder = new TextDecoder("utf-8", { fatal: true });

function decode(bytes: Buffer, line: number): SourceLine {
  let body = bytes;
  if (line === 1 && BOM.every((b, i) => body[i] === b)) body = body.subarray(3);
  if (body[body.length - 1] === 0x0d) body = body.subarray(0, body.length - 1);
  try {
    return { line, text: decoder.decode(body), bytes: bytes.length };
  } catch {
    return { line, error: "invalid UTF-8", bytes: bytes.length };
  }
}

/**
 * Reads a file line by line in bounded memory: 1 MiB chunks, one line held at a time. Strips a
 * leading BOM and CR of CRLF, reports invalid UTF-8 and over-long lines as errors with their
 * line number (the rest of an over-long line is skipped, never buffered). A final line without
 * a newline is still a line. `onBytes` sees every byte read, in order (to hash the same pass).
 */
export function* readLines(
  path: string,
  maxLineBytes = MAX_LINE_BYTES,
  onBytes?: (bytes: Buffer) => void,
): Generator<SourceLine> {
  const fd = openLegacyFile(path);
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let parts: Buffer[] = [];
  let partBytes = 0;
  let line = 1;
  let overLong = false;
  try {
    for (;;) {
      const read = readSync(fd, chunk, 0, CHUNK_BYTES, null);
      if (read === 0) break;
      onBytes?.(chunk.subarray(0, read));
      let start = 0;
      for (
        let nl = chunk.indexOf(0x0a, 0);
        nl !== -1 && nl < read;
        nl = chunk.indexOf(0x0a, start)
      ) {
        const piece = chunk.subarray(start, nl);
        const total = partBytes + piece.length;
        if (overLong || total > maxLineBytes) {
          yield { line, error: `line is over ${maxLineBytes} bytes`, bytes: total };
        } else {
          // Most lines lie within one chunk: decoded in place, not copied first.
          yield decode(parts.length === 0 ? piece : Buffer.concat([...parts, piece]), line);
        }
        parts = [];
        partBytes = 0;
        overLong = false;
        line++;
        start = nl + 1;
      }
      const rest = chunk.subarray(start, read);
      if (partBytes + rest.length > maxLineBytes) {
        overLong = true;
        partBytes += rest.length;
        parts = [];
      } else if (rest.length > 0) {
        parts.push(Buffer.from(rest));
        partBytes += rest.length;
      }
    }
    if (overLong) yield { line, error: `line is over ${maxLineBytes} bytes`, bytes: partBytes };
    else if (partBytes > 0) yield decode(Buffer.concat(parts), line);
  } finally {
    closeSync(fd);
  }
}

export type JsonLine = { line: number; value: unknown } | { line: number; error: string };

/**
 * The non-blank lines of a JSONL file, each parsed: a line that is not valid JSON (or not UTF-8,
 * or over-long) comes back as an error with its line number, for the report.
 */
export function* readJsonLines(path: string): Generator<JsonLine> {
  for (const read of readLines(path)) {
    if ("error" in read) {
      yield { line: read.line, error: read.error };
      continue;
    }
    if (read.text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(read.text);
    } catch (error) {
      yield { line: read.line, error: `invalid JSON (${(error as Error).message})` };
      continue;
    }
    if (nestedDeeperThan(read.text, value, MAX_JSON_DEPTH)) {
      yield { line: read.line, error: `JSON nested deeper than ${MAX_JSON_DEPTH} levels` };
      continue;
    }
    yield { line: read.line, value };
  }
}
