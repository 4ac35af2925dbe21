import { isRecord } from "../../transcript/record.js";
import { type Block, field, type RenderContext } from "./block.js";
import { clean, expandTabs, flatten } from "./style.js";

/** `name(key="value", n=1)`: tool arguments as a call, values as compact JSON. */
function formatCall(block: Record<string, unknown>): string {
  const name = flatten(field(block, "name")) || "?";
  const args = block.arguments ?? block.input;
  const list = isRecord(args)
    ? Object.entries(args)
        .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
        .join(", ")
    : args === undefined
      ? ""
      : JSON.stringify(args);
  return `${name}(${clean(list ?? "")})`;
}

/** Lines of a text: without the blank lines a model puts before and after it, tabs expanded. */
export function textLines(text: string): string[] {
  const lines = clean(text).split("\n").map(expandTabs);
  while (lines.length > 0 && lines[0]?.trim() === "") lines.shift();
  while (lines.length > 0 && lines.at(-1)?.trim() === "") lines.pop();
  return lines;
}

function thinkingLines(text: string, ctx: RenderContext): string[] {
  const { style } = ctx;
  if (ctx.full) return textLines(`thinking: ${text}`).map((line) => style.dim(line));
  return [style.dim(ctx.fit(`thinking: ${flatten(clean(text))}`, ctx.width))];
}

function blockLines(block: unknown, ctx: RenderContext): string[] {
  const { style } = ctx;
  if (!isRecord(block)) return [];
  switch (block.type) {
    case "text":
    case "output_text":
      return textLines(field(block, "text"));
    case "thinking":
      return thinkingLines(field(block, "thinking"), ctx);
    case "toolCall":
    case "tool_use":
      return [style.yellow(ctx.fit(`→ ${flatten(formatCall(block))}`, ctx.width))];
    case "image":
      return [style.dim(`[image ${field(block, "mimeType")}]`.replace(" ]", "]"))];
    default:
      return [style.dim(`[${flatten(clean(String(block.type)))}]`)];
  }
}

/** Lines of a message's content: a plain string, or blocks (text, thinking, tool calls, images). */
export function contentLines(content: unknown, ctx: RenderContext): string[] {
  if (typeof content === "string") return textLines(content);
  if (!Array.isArray(content)) return [];
  return content.flatMap((block) => blockLines(block, ctx));
}

/** The text of a tool result: its text blocks, images as `[image]`. */
function resultText(content: unknown): string {
  if (typeof content === "string") return clean(content);
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => {
      if (!isRecord(block)) return "";
      return block.type === "image" ? "[image]" : field(block, "text");
    })
    .filter((text) => text !== "")
    .join("\n");
}

/** On one line, cut to the width; with `full`, the whole text under the head. */
function toolResultBlock(message: Record<string, unknown>, ctx: RenderContext): Block {
  const failed = message.isError === true;
  const name = flatten(field(message, "toolName")) || "tool";
  const text = resultText(message.content);
  const head = `← ${name}${failed ? " (error)" : ""}:`;
  const tone = failed ? ctx.style.red : undefined;
  if (ctx.full && text.includes("\n"))
    return { speaker: "tool", inline: head, body: textLines(text), tone };
  return { speaker: "tool", inline: `${head} ${flatten(text) || "(no output)"}`, tone };
}

/** A `message` event: user and assistant content as blocks, tool results on one line. */
export function renderMessage(message: Record<string, unknown>, ctx: RenderContext): Block {
  const role = flatten(field(message, "role")) || "?";
  if (role === "toolResult") return toolResultBlock(message, ctx);
  if (role === "bashExecution") return bashBlock(message, ctx);
  const body = contentLines(message.content, ctx);
  const error = field(message, "errorMessage");
  // Failed turns often have empty content; the error is the only thing that says what happened.
  if (error) body.push(ctx.style.red(ctx.fit(`! ${flatten(error)}`, ctx.width)));
  if (body.length === 0) return { speaker: role, quiet: true, inline: "(no content)" };
  return { speaker: role, body };
}

// A command's output beyond this many lines is left out unless --full.
export const BASH_OUTPUT_LINES = 12;

function bashStatus(message: Record<string, unknown>, ctx: RenderContext): string {
  const { exitCode } = message;
  const parts = [
    message.cancelled === true
      ? "cancelled"
      : typeof exitCode === "number"
        ? `exit ${exitCode}`
        : "exit code unknown",
  ];
  if (message.truncated === true) {
    const path = flatten(field(message, "fullOutputPath"));
    parts.push(`output truncated when recorded${path ? `; whole output was in ${path}` : ""}`);
  }
  if (message.excludeFromContext === true) parts.push("not sent to the model");
  const line = `[${parts.join(", ")}]`;
  const failed = message.cancelled === true || (typeof exitCode === "number" && exitCode !== 0);
  return failed ? ctx.style.red(line) : ctx.style.dim(line);
}

/** A command the user ran in the session (`!cmd`): the command, its output, its exit code. */
function bashBlock(message: Record<string, unknown>, ctx: RenderContext): Block {
  const output = textLines(field(message, "output"));
  const shown = ctx.full ? output : output.slice(0, BASH_OUTPUT_LINES);
  const body = shown.map((line) => ctx.fit(line, ctx.width));
  const hidden = output.length - shown.length;
  if (hidden > 0) {
    ctx.markCut();
    body.push(ctx.style.dim(`… ${hidden} more lines`));
  }
  body.push(bashStatus(message, ctx));
  const command = field(message, "command");
  return { speaker: "bash", inline: `$ ${flatten(command) || "?"}`, body };
}
