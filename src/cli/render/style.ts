/**
 * Terminal styling for the CLI. A `Style` is the identity when color is off, so renderers never
 * branch on it and plain output is exactly the colored output without escapes.
 */
export interface Style {
  readonly color: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
}

const sgr =
  (open: number, close: number) =>
  (text: string): string =>
    text === "" ? "" : `\u001b[${open}m${text}\u001b[${close}m`;
const plain = (text: string): string => text;

export function createStyle(color: boolean): Style {
  if (!color) {
    return {
      color,
      bold: plain,
      dim: plain,
      red: plain,
      green: plain,
      yellow: plain,
      cyan: plain,
      magenta: plain,
    };
  }
  return {
    color,
    bold: sgr(1, 22),
    dim: sgr(2, 22),
    red: sgr(31, 39),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    cyan: sgr(36, 39),
    magenta: sgr(35, 39),
  };
}

/** Color only for a person at a terminal, and never when NO_COLOR is set (no-color.org). */
export function shouldColor(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return stream.isTTY === true && !env.NO_COLOR;
}

/** Columns to fit one-line summaries into: the terminal's, else a width that reads well in a pager. */
export function outputWidth(
  stream: { isTTY?: boolean; columns?: number } = process.stdout,
): number {
  return stream.isTTY === true && stream.columns ? stream.columns : 100;
}

// Transcripts hold model and tool output: an escape sequence in it must not reach the terminal,
// where it could rewrite the screen or the title. One character for one, so offsets stay valid.
const CONTROL = /(?![\n\t])\p{Cc}/gu;

/** Replaces control characters (except newline and tab) with U+FFFD. */
export function sanitize(text: string): string {
  return text.replace(CONTROL, "\ufffd");
}

// An ANSI escape sequence (CSI or OSC) from a label or a tool's output would restyle the terminal.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching escape sequences is the point
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?)/g;

/** Text without ANSI escape sequences: colored tool output reads as its words, not as `[32m`. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/**
 * Text for the screen: escape sequences removed, CRLF line ends made LF, other control characters
 * (bar newline and tab) replaced.
 */
export function clean(text: string): string {
  return sanitize(stripAnsi(text).replace(/\r\n/g, "\n"));
}

/** Tabs as spaces to the next 8-column stop, so an indented line keeps its shape. */
export function expandTabs(line: string): string {
  if (!line.includes("\t")) return line;
  let out = "";
  for (const ch of line) out += ch === "\t" ? " ".repeat(8 - (Array.from(out).length % 8)) : ch;
  return out;
}

/** Whitespace runs (newlines included) collapsed to one space: for one-line summaries. */
export function flatten(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** At most `max` characters (code points), ending in "…" when cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return `${chars.slice(0, Math.max(0, max - 1)).join("")}…`;
}

/**
 * Marks the `[start, end)` ranges of a search snippet: bold with color, `[` `]` without, so the
 * match stays visible in a pipe or a log file.
 */
export function highlight(
  text: string,
  ranges: readonly (readonly [number, number])[],
  style: Style,
): string {
  const mark = style.color ? style.bold : (match: string) => `[${match}]`;
  let out = "";
  let at = 0;
  for (const [start, end] of [...ranges].sort((a, b) => a[0] - b[0])) {
    if (start < at || end <= start || end > text.length) continue;
    out += sanitize(text.slice(at, start)) + mark(sanitize(text.slice(start, end)));
    at = end;
  }
  return out + sanitize(text.slice(at));
}

/** `2026-03-02 08:00:01` (UTC) from an ISO timestamp, else from Unix milliseconds. */
export function formatTime(timestamp: unknown, fallbackMs?: number): string {
  const parsed = typeof timestamp === "string" ? Date.parse(timestamp) : Number.NaN;
  const ms = Number.isFinite(parsed) ? parsed : fallbackMs;
  if (ms === undefined || !Number.isFinite(ms)) return "-";
  return new Date(ms).toISOString().slice(0, 19).replace("T", " ");
}
