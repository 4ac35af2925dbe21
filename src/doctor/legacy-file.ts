import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { StateError } from "../db/errors.js";
import { lazyRequire } from "../lazy-require.js";

// Most legacy JSON is plain JSON: JSON5 loads only for a hand-edited file (see lazyRequire).
const json5 = lazyRequire<typeof import("json5")>("json5");

/**
 * SQLite's JSON functions refuse documents nested deeper than 1000 levels, and V8's recursive
 * `JSON.stringify` overflows its stack a little past that: deeper legacy JSON is refused by name.
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * Opens a legacy file for reading without following a symbolic link: a file swapped for a link
 * after the plan saw a regular file is refused here (ELOOP), never read through.
 */
export function openLegacyFile(path: string): number {
  try {
    return openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ELOOP") throw error;
    throw new StateError(
      "E_PATH",
      `${path} is a symbolic link (it was a regular file when planned); links are never followed`,
      { details: { path }, cause: error },
    );
  }
}

/** A whole legacy file as text, a leading BOM removed. */
export function readLegacyText(path: string): string {
  const fd = openLegacyFile(path);
  try {
    const bytes = Buffer.allocUnsafe(fstatSync(fd).size);
    let filled = 0;
    for (let read = -1; read !== 0 && filled < bytes.length; filled += read) {
      read = readSync(fd, bytes, filled, bytes.length - filled, null);
    }
    return bytes
      .subarray(0, filled)
      .toString("utf8")
      .replace(/^\uFEFF/, "");
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether the JSON value parsed from `text` nests deeper than `max` arrays and objects. Each level
 * takes an opening and a closing bracket, so a text shorter than `2 × (max + 1)` characters (most
 * transcript lines) is not walked at all.
 */
export function nestedDeeperThan(text: string, value: unknown, max: number): boolean {
  return text.length >= 2 * (max + 1) && walksDeeperThan(value, max);
}

/** Whether a parsed JSON value nests deeper than `max` (checked without recursion). */
function walksDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<{ item: unknown; depth: number }> = [{ item: value, depth: 1 }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (next.item === null || typeof next.item !== "object") continue;
    if (next.depth > max) return true;
    for (const child of Object.values(next.item)) {
      if (child !== null && typeof child === "object")
        stack.push({ item: child, depth: next.depth + 1 });
    }
  }
  return false;
}

/**
 * Parses a legacy JSON document, falling back to JSON5 (comments, trailing commas) as the
 * gateways did. A document nested too deeply is `E_CORRUPT_SOURCE` naming the file.
 */
export function parseLegacyJson(path: string, text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    try {
      value = json5().parse(text);
    } catch {
      throw error;
    }
  }
  if (nestedDeeperThan(text, value, MAX_JSON_DEPTH)) {
    throw new StateError(
      "E_CORRUPT_SOURCE",
      `${path} nests JSON deeper than ${MAX_JSON_DEPTH} levels; it cannot be imported`,
      { details: { path } },
    );
  }
  return value;
}

/**
 * Keys that appear more than once in one object of a valid JSON text (JSON.parse keeps only the
 * last copy), each with how many times. Strings are skipped whole, so braces inside them are not
 * structure.
 */
export function repeatedJsonKeys(text: string): Map<string, number> {
  const objects: Array<Map<string, number> | null> = [];
  const repeated = new Map<string, number>();
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      const keys = objects.at(-1);
      if (keys && nextNonSpace(text, end) === ":") {
        const key = JSON.parse(text.slice(i, end)) as string;
        const seen = (keys.get(key) ?? 0) + 1;
        keys.set(key, seen);
        if (seen > 1) repeated.set(key, Math.max(seen, repeated.get(key) ?? 0));
      }
      i = end - 1;
    } else if (c === 0x7b) objects.push(new Map());
    else if (c === 0x5b) objects.push(null);
    else if (c === 0x7d || c === 0x5d) objects.pop();
  }
  return repeated;
}

/** The index just past the closing quote of the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i + 1;
  }
  return text.length;
}

function nextNonSpace(text: string, from: number): string {
  let i = from;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return text[i] ?? "";
}
