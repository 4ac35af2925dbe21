import type { StoredEvent } from "../../stores/agent/transcript-store.js";
import { parentIdOf, type TranscriptEvent } from "../../transcript/event.js";
import { isRecord } from "../../transcript/record.js";
import { type Block, field, type RenderContext } from "./block.js";
import { renderMessage } from "./message.js";
import { createStyle, flatten, formatTime, type Style, sanitize, truncate } from "./style.js";

export interface ConversationOptions {
  /** ANSI colors; the caller decides (TTY and NO_COLOR), the text is the same either way. */
  color: boolean;
  /** Columns that one-line summaries (tool calls, results, thinking) are cut to. Default 100. */
  width?: number;
}

export const INDENT = "    ";

/** A summary (compaction, branch summary) as a visible marker line and its text. */
function summaryBlock(event: TranscriptEvent, title: string, ctx: RenderContext): Block {
  const { style } = ctx;
  const marker = style.magenta(style.bold(`══ ${title} ══`));
  const summary = field(event, "summary");
  return { speaker: "system", body: [marker, ...(summary ? summary.split("\n") : [])] };
}

type EventRenderer = (event: TranscriptEvent, ctx: RenderContext) => Block;

const RENDERERS: Record<string, EventRenderer> = {
  message: (event, ctx) =>
    isRecord(event.message) ? renderMessage(event.message, ctx) : unknown(event),
  session: (event) => {
    const cwd = field(event, "cwd");
    return {
      speaker: "system",
      quiet: true,
      inline: `session ${sanitize(event.id)} started${cwd ? ` in ${cwd}` : ""}`,
    };
  },
  model_change: (event) => ({
    speaker: "system",
    quiet: true,
    inline: `model → ${[field(event, "provider"), field(event, "modelId")].filter(Boolean).join("/")}`,
  }),
  thinking_level_change: (event) => ({
    speaker: "system",
    quiet: true,
    inline: `thinking level → ${field(event, "thinkingLevel") || "?"}`,
  }),
  compaction: (event, ctx) => {
    const tokens =
      typeof event.tokensBefore === "number" ? ` (${event.tokensBefore} tokens before)` : "";
    return summaryBlock(event, `compaction${tokens}: earlier messages summarised`, ctx);
  },
  branch_summary: (event, ctx) => summaryBlock(event, "branch summary", ctx),
  custom: (event) => ({
    speaker: "system",
    quiet: true,
    inline: `[custom ${field(event, "customType")}]`,
  }),
  custom_message: (event) => {
    const content = field(event, "content");
    return {
      speaker: "system",
      inline: `[${field(event, "customType") || "custom_message"}]`,
      body: content ? content.split("\n") : [],
    };
  },
  label: (event) => ({
    speaker: "system",
    quiet: true,
    inline: `label ${field(event, "targetId")} → ${field(event, "label") || "(cleared)"}`,
  }),
};

function unknown(event: TranscriptEvent): Block {
  return { speaker: "system", quiet: true, inline: `[${sanitize(String(event.type))}]` };
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
  const name = truncate(sanitize(block.speaker), 12);
  // Padded only when text follows, so a line never ends in spaces hidden inside an escape.
  const label = block.inline ? name.padEnd(9) : name;
  const plain = `${head.seq}  ${head.time}  ${label}`;
  const inline = block.inline
    ? truncate(flatten(block.inline), Math.max(20, total - plain.length - 2))
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

/**
 * A readable conversation from stored events: one head line per event (seq, UTC time, speaker)
 * and the content indented below it. An event whose parent is not the event above it on screen
 * started a new branch of the tree, so it is marked with where it branched from.
 */
export function renderConversation(
  events: readonly StoredEvent[],
  options: ConversationOptions,
): string {
  const total = options.width ?? 100;
  const ctx: RenderContext = { style: createStyle(options.color), width: total - INDENT.length };
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
      lines.push(ctx.style.yellow(`↳ branch from ${sanitize(parent)}`));
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
  return lines.join("\n");
}
