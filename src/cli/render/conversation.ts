import type { StoredEvent } from "../../stores/agent/transcript-store.js";
import { parentIdOf, type TranscriptEvent } from "../../transcript/event.js";
import { isRecord } from "../../transcript/record.js";
import { type Block, compactJson, field, type RenderContext } from "./block.js";
import { contentLines, renderMessage, textLines } from "./message.js";
import { clean, createStyle, flatten, formatTime, type Style, truncate } from "./style.js";

export interface ConversationOptions {
  /** ANSI colors; the caller decides (TTY and NO_COLOR), the text is the same either way. */
  color: boolean;
  /** Columns that one-line summaries (tool calls, results, thinking) are cut to. Default 100. */
  width?: number;
  /** Show every text whole (tool results, arguments, outputs) instead of cut to the width. */
  full?: boolean;
}

export const INDENT = "    ";

/** A summary (compaction, branch summary) as a visible marker line and its text. */
function summaryBlock(event: TranscriptEvent, title: string, ctx: RenderContext): Block {
  const { style } = ctx;
  const marker = style.magenta(style.bold(`══ ${title} ══`));
  return { speaker: "system", body: [marker, ...textLines(field(event, "summary"))] };
}

/** What a compaction says about the files the summarised turns touched. */
function compactionFiles(event: TranscriptEvent, ctx: RenderContext): string[] {
  const details = isRecord(event.details) ? event.details : {};
  const count = (key: string) => (Array.isArray(details[key]) ? details[key].length : 0);
  const read = count("readFiles");
  const modified = count("modifiedFiles");
  if (read + modified === 0) return [];
  return [ctx.style.dim(`(files read: ${read}, modified: ${modified})`)];
}

/** Fields of an event beyond the common ones, as compact JSON: what a record says that has no view. */
function extraFields(event: TranscriptEvent, omit: readonly string[]): string {
  const rest = Object.entries(event).filter(
    ([key]) => !["type", "id", "parentId", "timestamp", ...omit].includes(key),
  );
  return rest.length === 0 ? "" : compactJson(Object.fromEntries(rest));
}

const quiet = (inline: string): Block => ({ speaker: "system", quiet: true, inline });
const quoted = (text: string): string => JSON.stringify(flatten(text));

type EventRenderer = (event: TranscriptEvent, ctx: RenderContext) => Block;

const RENDERERS: Record<string, EventRenderer> = {
  message: (event, ctx) =>
    isRecord(event.message) ? renderMessage(event.message, ctx) : unknown(event),
  session: (event) => {
    const cwd = field(event, "cwd");
    return quiet(`session ${clean(String(event.id))} started${cwd ? ` in ${cwd}` : ""}`);
  },
  session_info: (event) => {
    const name = field(event, "name");
    return quiet(name ? `session named ${quoted(name)}` : "session name cleared");
  },
  model_change: (event) =>
    quiet(
      `model → ${[field(event, "provider"), field(event, "modelId")].filter(Boolean).join("/")}`,
    ),
  thinking_level_change: (event) =>
    quiet(`thinking level → ${field(event, "thinkingLevel") || "?"}`),
  compaction: (event, ctx) => {
    const tokens =
      typeof event.tokensBefore === "number" ? ` (${event.tokensBefore} tokens before)` : "";
    const block = summaryBlock(event, `compaction${tokens}: earlier messages summarised`, ctx);
    return { ...block, body: [...(block.body ?? []), ...compactionFiles(event, ctx)] };
  },
  branch_summary: (event, ctx) => {
    const from = field(event, "fromId");
    return summaryBlock(event, `branch summary${from ? ` (from ${from})` : ""}`, ctx);
  },
  custom: (event) => {
    const data = compactJson(event.data);
    return quiet(`[custom ${field(event, "customType")}]${data ? ` ${data}` : ""}`);
  },
  custom_message: (event, ctx) => {
    const hidden = event.display === false ? " (not shown to the user)" : "";
    return {
      speaker: "system",
      inline: `[${field(event, "customType") || "custom_message"}]${hidden}`,
      body: contentLines(event.content, ctx),
    };
  },
  label: (event) => {
    const label = field(event, "label");
    return quiet(`label ${field(event, "targetId")} → ${label ? quoted(label) : "(cleared)"}`);
  },
};

function unknown(event: TranscriptEvent): Block {
  const extra = extraFields(event, []);
  return quiet(`[${clean(String(event.type))}]${extra ? ` ${extra}` : ""}`);
}

const SPEAKER_STYLES: Record<string, (style: Style, text: string) => string> = {
  user: (style, text) => style.green(style.bold(text)),
  assistant: (style, text) => style.cyan(style.bold(text)),
  tool: (style, text) => style.yellow(text),
};

interface HeadParts {
  seq: string;
  time: string;
}

function renderBlock(block: Block, head: HeadParts, ctx: RenderContext, total: number): string[] {
  const { style } = ctx;
  const name = truncate(flatten(clean(block.speaker)), 12);
  // Padded only when text follows, so a line never ends in spaces hidden inside an escape.
  const label = block.inline ? name.padEnd(9) : name;
  const plain = `${head.seq}  ${head.time}  ${label}`;
  const inline = block.inline
    ? ctx.fit(flatten(block.inline), Math.max(20, total - plain.length - 2))
    : "";
  let line: string;
  if (block.quiet) {
    // Dimmed whole: an inner style's reset (SGR 22) would end the outer dim halfway.
    line = style.dim(inline ? `${plain}  ${inline}` : plain);
  } else {
    const paint = SPEAKER_STYLES[block.speaker] ?? ((s: Style, text: string) => s.dim(text));
    const tone = block.tone ?? ((text: string) => text);
    line = `${style.dim(head.seq)}  ${head.time}  ${paint(style, label)}`;
    if (inline) line += `  ${tone(inline)}`;
  }
  return [line, ...(block.body ?? []).map((text) => `${INDENT}${text}`.trimEnd())];
}

/** A rendered page, and how many texts were cut to fit (0 with `full`). */
export interface RenderedConversation {
  text: string;
  cuts: number;
}

function createContext(
  options: ConversationOptions,
  total: number,
): RenderContext & {
  cuts: () => number;
} {
  const full = options.full === true;
  let cuts = 0;
  return {
    style: createStyle(options.color),
    width: total - INDENT.length,
    full,
    fit: (text, max) => {
      if (full) return text;
      const fitted = truncate(text, max);
      if (fitted !== text) cuts++;
      return fitted;
    },
    markCut: () => {
      cuts++;
    },
    cuts: () => cuts,
  };
}

/**
 * A readable conversation from stored events: one head line per event (seq, UTC time, speaker)
 * and the content indented below it. An event whose parent is not the event above it on screen
 * started a new branch of the tree, so it is marked with where it branched from.
 */
export function renderConversationPage(
  events: readonly StoredEvent[],
  options: ConversationOptions,
): RenderedConversation {
  const total = options.width ?? 100;
  const ctx = createContext(options, total);
  const seqWidth = String(events.at(-1)?.seq ?? 0).length + 1;
  const lines: string[] = [];
  let previousId: string | undefined;
  for (const stored of events) {
    const { event } = stored;
    const parent = parentIdOf(event);
    const block = (RENDERERS[event.type] ?? unknown)(event, ctx);
    const hasBody = (block.body?.length ?? 0) > 0;
    // Blocks with a body stand apart; runs of one-line events stay together.
    if (hasBody && lines.length > 0 && lines.at(-1) !== "") lines.push("");
    if (previousId !== undefined && parent !== null && parent !== previousId) {
      lines.push(ctx.style.yellow(`↳ branch from ${flatten(clean(parent))}`));
    }
    const head = {
      seq: `#${stored.seq}`.padEnd(seqWidth),
      time: formatTime(event.timestamp, stored.createdAt),
    };
    lines.push(...renderBlock(block, head, ctx, total));
    if (hasBody) lines.push("");
    previousId = typeof event.id === "string" ? event.id : undefined;
  }
  while (lines.at(-1) === "") lines.pop();
  return { text: lines.join("\n"), cuts: ctx.cuts() };
}

/** The text of `renderConversationPage`. */
export function renderConversation(
  events: readonly StoredEvent[],
  options: ConversationOptions,
): string {
  return renderConversationPage(events, options).text;
}
