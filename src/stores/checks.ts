import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { type JsonValue, toJson } from "./json.js";

/** Where a store reads the time; tests pass a simulated clock. */
export type Clock = () => number;

export const MAX_NAME_LENGTH = 1024;
export const MAX_LIST_LIMIT = 10_000;
// A lone UTF-16 surrogate cannot be stored as UTF-8: SQLite would see U+FFFD instead, so two
// different JS strings could name one row.
const LONE_SURROGATE = /\p{Surrogate}/u;

function show(value: unknown): string {
  if (typeof value !== "string") return value === null ? "null" : typeof value;
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/** `rejectUnknownOptions`, returning a frozen copy: later mutation cannot change a checked value. */
export function checkOptions<T extends object>(
  options: T,
  known: readonly string[],
  where: string,
): T {
  rejectUnknownOptions(options, known, where);
  return Object.freeze({ ...options });
}

/** A non-empty, well-formed string of at most `max` characters (ids, keys, names). */
export function checkText(what: string, value: unknown, max = MAX_NAME_LENGTH): string {
  if (
    typeof value !== "string" ||
    value.length === 0 ||
    value.length > max ||
    LONE_SURROGATE.test(value)
  ) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} must be well-formed text of 1 to ${max} characters, got ${show(value)}`,
    );
  }
  return value;
}

/** `checkText`, or null for undefined/null. */
export function optionalText(what: string, value: unknown, max = MAX_NAME_LENGTH): string | null {
  return value === undefined || value === null ? null : checkText(what, value, max);
}

export function checkInteger(what: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} must be an integer from ${min} to ${max}, got ${String(value)}`,
    );
  }
  return value;
}

export const MAX_ERROR_TEXT = 16 * 1024;

/**
 * An error message as given, made storable instead of refused: errors come from anywhere (a
 * channel's API, a crashed tool), and losing the record of a failure over a bad character would be
 * worse than the character. Cut to `max` characters; lone surrogates become U+FFFD.
 */
export function errorText(value: unknown, max = MAX_ERROR_TEXT): string {
  const text = String(value)
    .slice(0, max)
    .replace(/\p{Surrogate}/gu, "\uFFFD");
  return text === "" ? "unknown error" : text;
}

export function optionalErrorText(value: unknown): string | null {
  return value === undefined || value === null ? null : errorText(value);
}

/** A time in Unix milliseconds. */
export function checkTime(what: string, value: unknown): number {
  return checkInteger(what, value, 0, Number.MAX_SAFE_INTEGER);
}

export function optionalTime(what: string, value: unknown): number | null {
  return value === undefined || value === null ? null : checkTime(what, value);
}

/** The list `limit` option: default 100, at most MAX_LIST_LIMIT. */
export function checkLimit(value: unknown, fallback = 100): number {
  return value === undefined ? fallback : checkInteger("limit", value, 1, MAX_LIST_LIMIT);
}

/** `expires_at` for a time-to-live in ms from `now`; null (never expires) without one. */
export function expiryOf(now: number, ttlMs: unknown): number | null {
  if (ttlMs === undefined || ttlMs === null) return null;
  return now + checkInteger("ttlMs", ttlMs, 1, Number.MAX_SAFE_INTEGER - now);
}

export function isPlainObject(value: unknown): value is { [key: string]: JsonValue } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** JSON text of a value, refused with E_TOO_LARGE above `maxBytes`. */
export function encodeJson(what: string, value: unknown, maxBytes: number): string {
  const json = toJson(value, what);
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) {
    throw new StateError(
      "E_TOO_LARGE",
      `${what} is ${bytes} bytes of JSON; the limit is ${maxBytes}. Keep large values in blob storage and reference them`,
      { details: { bytes, limit: maxBytes } },
    );
  }
  return json;
}

/** JSON text of a plain object (a record kept verbatim), refusing arrays and scalars. */
export function encodeRecord(what: string, value: unknown, maxBytes: number): string {
  if (!isPlainObject(value)) {
    throw new StateError("E_INVALID_ARGUMENT", `${what} must be a plain JSON object`);
  }
  return encodeJson(what, value, maxBytes);
}

/** Parses a stored JSON column; a row that does not parse is E_CORRUPT, naming the row. */
export function decodeJson<T = JsonValue>(what: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new StateError("E_CORRUPT", `${what} holds invalid JSON`, { cause: error });
  }
}

/** Narrows a stored TEXT to one of `values`, else E_CORRUPT (someone wrote the row by hand). */
export function checkStored<T extends string>(
  what: string,
  value: string,
  values: readonly T[],
): T {
  if (!(values as readonly string[]).includes(value)) {
    throw new StateError("E_CORRUPT", `${what} has unknown value ${show(value)}`);
  }
  return value as T;
}
