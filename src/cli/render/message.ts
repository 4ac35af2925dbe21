import { isRecord } from "../../transcript/record.js";
import { type Block, field, type RenderContext } from "./block.js";
import { flatten, sanitize, truncate } from "./style.js";

/** `name(key="value", n=1)`: tool arguments as a call, values as JSON. */
function formatCall(block: Record<string, unknown>): string {
  const name = field(block, "name") || "?";
  const args = block.arguments;
  const list = isRecord(args)
    ? Object.entries(args)
        .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
        .join(", ")
    : args === undefined
      ? ""
      : JSON.stringify(args);
  return `${name}(${sanitize(list ?? "")})`;
}

function blockLines(block: unknown, ctx: RenderContext): string[] {
  const { style, width } = ctx;
  if (!isRecord(block)) return [];
  switch (block.type) {
    case "text":
    case "output_text":
      return field(block, "text").split("\n");
    case "thinking":
      return [style.dim(truncate(`thinking: ${flatten(field(block, "thinking"))}`, width))];
    case "toolCall":
    case "tool_use":
      return [style.yellow(truncate(`→ ${flatten(formatCall(block))}`, width))];
    case "image":
      return [style.dim(`[image ${field(block, "mimeType")}]`.replace(" ]", "]"))];
    default:
      return [style.dim(`[${sanitize(String(block.type))}]`)];
  }
}

/** Lines of a message's content: a plain string, or blocks (text, thinking, tool calls, images). */
export function contentLines(content: unknown, ctx: RenderContext): string[] {
  if (typeof content === "string") return sanitize(content).split("\n");
  if (!Array.isArray(content)) return [];
  return content.flatMap((block) => blockLines(block, ctx));
}

/** The text of a tool result on one line: its text blocks, images as `[image]`. */
function resultText(content: unknown): string {
  if (typeof content === "string") return sanitize(content);
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => {
      if (!isRecord(block)) return "";
      return block.type === "image" ? "[image]" : field(block, "text");
    })
    .filter((text) => text !== "")
    .join(" ");
}

function toolResultBlock(message: Record<string, unknown>, ctx: RenderContext): Block {
  const failed = message.isError === true;
  const name = field(message, "toolName") || "tool";
  const text = flatten(resultText(message.content));
  return {
    speaker: "tool",
    inline: `← ${name}${failed ? " (error)" : ""}: ${text || "(no output)"}`,
    tone: failed ? ctx.style.red : undefined,
  };
}

/** A `message` event: user and assistant content as blocks, tool results on one line. */
export function renderMessage(message: Record<string, unknown>, ctx: RenderContext): Block {
  const role = field(message, "role") || "?";
  if (role === "toolResult") return toolResultBlock(message, ctx);
  const body = contentLines(message.content, ctx);
  const error = field(message, "errorMessage");
  // Failed turns often have empty content; the error is the only thing that says what happened.
  if (error) body.push(ctx.style.red(truncate(`! ${flatten(error)}`, ctx.width)));
  if (body.length === 0) return { speaker: role, quiet: true, inline: "(no content)" };
  return { speaker: role, body };
}
