/** Plain-text tables and sizes for the CLI. JSON output goes through `printJson`. */
import { isAbsolute, relative } from "node:path";
import {
  createStyle,
  flatten,
  sanitize,
  shouldColor,
  stripAnsi,
  truncate,
} from "./render/style.js";

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export { formatBytes } from "../format-bytes.js";

export interface Column<Row> {
  header: string;
  value: (row: Row) => string | number;
  align?: "left" | "right";
  /** Cells longer than this are cut, ending in "…", unless the table is rendered `full`. */
  max?: number;
  /** Where a long cell is cut: its end (default), or its middle, for paths whose end tells them apart. */
  cut?: "end" | "middle";
}

export interface TableOptions {
  /** Show every cell whole (`--full`). */
  full?: boolean;
}

/** One row stays one line: escape sequences go, and newlines, tabs and other controls become spaces. */
export function cleanCell(text: string): string {
  return sanitize(flatten(stripAnsi(text)));
}

/** At most `max` characters, keeping both ends of the text (a path keeps its root and its name). */
export function truncateMiddle(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  const head = Math.ceil((max - 1) / 2);
  const tail = max - 1 - head;
  return `${chars.slice(0, head).join("")}…${tail > 0 ? chars.slice(-tail).join("") : ""}`;
}

export function renderTable<Row>(
  rows: readonly Row[],
  columns: readonly Column<Row>[],
  options: TableOptions = {},
): string {
  const cells = rows.map((row) =>
    columns.map((column) => {
      const text = cleanCell(String(column.value(row)));
      if (column.max === undefined || options.full) return text;
      return column.cut === "middle"
        ? truncateMiddle(text, column.max)
        : truncate(text, column.max);
    }),
  );
  const widths = columns.map((column, i) =>
    Math.max(column.header.length, ...cells.map((line) => Array.from(line[i] ?? "").length)),
  );
  const format = (line: readonly string[]): string =>
    line
      .map((cell, i) => {
        const pad = " ".repeat(Math.max(0, (widths[i] ?? 0) - Array.from(cell).length));
        return columns[i]?.align === "right" ? pad + cell : cell + pad;
      })
      .join("  ")
      .trimEnd();
  return [format(columns.map((c) => c.header)), ...cells.map(format)].join("\n");
}

/** A path inside the home relative to it (so tables fit a terminal); any other path as it is. */
export function pathInHome(home: string, path: string): string {
  const inside = relative(home, path);
  return inside.startsWith("..") || isAbsolute(inside) ? path : inside;
}

/**
 * The last line of a text list that stopped at its limit: the flags that show the next page.
 * Printed in a pipe too (plain there, dim on a terminal), so a script can page on as a person does.
 */
export function moreLine(flags: string): string {
  return `${createStyle(shouldColor()).dim(`more: ${flags}`)}\n`;
}

/** A page of at most `limit` rows, from a fetch of `limit + 1`: the extra row says more follow. */
export function pageOf<T>(rows: readonly T[], limit: number): { rows: T[]; more: boolean } {
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

/** A page fetched as `limit + 1` rows where the store allows (at its maximum, no probe row). */
export function fetchPage<T>(
  limit: number,
  max: number,
  fetch: (count: number) => readonly T[],
): { rows: T[]; more: boolean } {
  return pageOf(fetch(Math.min(limit + 1, max)), limit);
}

/** For lists without a cursor: a larger `--limit` is the way to see more, up to its maximum. */
export function largerLimit(limit: number, max: number): string | null {
  return limit >= max ? null : `--limit ${Math.min(max, limit * 2)}`;
}

const SHELL_SAFE = /^[\w@%+=:,./-]+$/;

/** An argument as a POSIX shell reads it back: bare when safe, else single-quoted. */
export function shellArg(text: string): string {
  if (SHELL_SAFE.test(text)) return text;
  // A control character cannot sit inside '…' on one line: bash's $'…' spells it as an escape.
  if (/\p{Cc}/u.test(text)) {
    const escaped = Array.from(text, (ch) => {
      if (ch === "\\" || ch === "'") return `\\${ch}`;
      const code = ch.codePointAt(0) ?? 0;
      return /\p{Cc}/u.test(ch) ? `\\x${code.toString(16).padStart(2, "0")}` : ch;
    }).join("");
    return `$'${escaped}'`;
  }
  return `'${text.replace(/'/g, "'\\''")}'`;
}
