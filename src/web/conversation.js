// Renders stored transcript events (the legacy record shape) as a readable conversation:
// messages with their text, thinking, tool calls and results, compaction and branch summaries
// as marked blocks, everything else as a quiet line. Text goes in as text nodes only.

import { formatTime, h, shortId } from "./dom.js";

const LONG_TEXT = 1200;

const isRecord = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
const str = (value) => (typeof value === "string" ? value : "");

/** A block of text that keeps line breaks; long text folds into a <details>. */
function prose(text, className = "text") {
  if (text.length <= LONG_TEXT) return h("div", { class: className }, text);
  return h(
    "details",
    { class: `${className} long` },
    h("summary", {}, `${text.slice(0, 240)}… (${text.length.toLocaleString("en-US")} characters)`),
    h("div", {}, text),
  );
}

function json(value) {
  try {
    return JSON.stringify(value, null, 2) ?? "";
  } catch {
    return String(value);
  }
}

function toolCall(block) {
  const name = str(block.name) || "?";
  const args = block.arguments ?? block.input;
  return h(
    "div",
    { class: "tool-call" },
    h("div", { class: "tool-head" }, h("span", { class: "arrow" }, "→ "), h("code", {}, name)),
    args === undefined ? null : h("pre", {}, json(args)),
  );
}

function contentBlock(block) {
  if (typeof block === "string") return prose(block);
  if (!isRecord(block)) return null;
  switch (block.type) {
    case "text":
    case "output_text":
      return prose(str(block.text));
    case "thinking":
      return h(
        "details",
        { class: "thinking" },
        h("summary", {}, "thinking"),
        h("div", { class: "text" }, str(block.thinking)),
      );
    case "toolCall":
    case "tool_use":
      return toolCall(block);
    case "image":
      return h(
        "div",
        { class: "quiet" },
        `[image${block.mimeType ? ` ${str(block.mimeType)}` : ""}]`,
      );
    default:
      return h("div", { class: "quiet" }, `[${String(block.type)}]`);
  }
}

function contentNodes(content) {
  if (typeof content === "string") return [prose(content)];
  if (!Array.isArray(content)) return [];
  return content.map(contentBlock);
}

function resultText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => (isRecord(block) ? (block.type === "image" ? "[image]" : str(block.text)) : ""))
    .filter((text) => text !== "")
    .join("\n");
}

function message(msg) {
  const role = str(msg.role) || "?";
  if (role === "toolResult") {
    const failed = msg.isError === true;
    const name = str(msg.toolName) || "tool";
    return {
      speaker: "tool",
      kind: failed ? "tool-result error" : "tool-result",
      body: [
        h(
          "div",
          { class: "tool-head" },
          h("span", { class: "arrow" }, "← "),
          h("code", {}, name),
          failed ? " (error)" : null,
        ),
        prose(resultText(msg.content) || "(no output)", "output"),
      ],
    };
  }
  const body = contentNodes(msg.content);
  if (msg.errorMessage) body.push(h("div", { class: "error-text" }, `! ${str(msg.errorMessage)}`));
  if (body.length === 0) body.push(h("div", { class: "quiet" }, "(no content)"));
  return { speaker: role, kind: `message role-${role.replace(/[^a-zA-Z]/g, "")}`, body };
}

function summaryBlock(title, event) {
  return {
    speaker: "system",
    kind: "summary",
    body: [h("div", { class: "summary-title" }, title), prose(str(event.summary), "text")],
  };
}

const quiet = (text) => ({ speaker: "system", kind: "quiet", inline: text });

const RENDERERS = {
  message: (e) => (isRecord(e.message) ? message(e.message) : quiet("[message]")),
  session: (e) => quiet(`session ${str(e.id)} started${e.cwd ? ` in ${str(e.cwd)}` : ""}`),
  model_change: (e) =>
    quiet(`model → ${[str(e.provider), str(e.modelId)].filter(Boolean).join("/")}`),
  thinking_level_change: (e) => quiet(`thinking level → ${str(e.thinkingLevel) || "?"}`),
  compaction: (e) =>
    summaryBlock(
      `Compaction: earlier messages summarised${typeof e.tokensBefore === "number" ? ` (${e.tokensBefore.toLocaleString("en-US")} tokens before)` : ""}`,
      e,
    ),
  branch_summary: (e) => summaryBlock("Branch summary: what the abandoned branch did", e),
  label: (e) => quiet(`label ${str(e.targetId)} → ${str(e.label) || "(cleared)"}`),
  custom: (e) => quiet(`[custom ${str(e.customType)}]`),
  custom_message: (e) => ({
    speaker: "system",
    kind: "custom",
    inline: `[${str(e.customType) || "custom_message"}]`,
    body: typeof e.content === "string" ? [prose(e.content)] : [],
  }),
};

/**
 * One event as an <article>. `context` tells where it sits: `previousId` (the event above it on
 * screen), `seqOf(id)` for loaded events, and `offBranch(seq)` for events off the current branch.
 */
export function renderEvent(stored, context) {
  const { event, seq } = stored;
  const render = RENDERERS[event.type] ?? ((e) => quiet(`[${String(e.type)}]`));
  const block = render(event);
  const parent = typeof event.parentId === "string" ? event.parentId : null;
  const branched =
    context.previousId !== undefined && parent !== null && parent !== context.previousId;
  const off = context.offBranch(seq);
  const parentSeq = parent === null ? undefined : context.seqOf(parent);
  return h(
    "article",
    {
      class: `event ${block.kind}${off ? " off-branch" : ""}`,
      id: `seq-${seq}`,
      "data-seq": seq,
      "data-type": String(event.type),
    },
    branched
      ? h(
          "div",
          { class: "branch-marker" },
          "↳ branch from ",
          parentSeq === undefined
            ? shortId(parent)
            : h(
                "button",
                { type: "button", class: "linklike", "data-jump": parentSeq },
                `#${parentSeq}`,
              ),
        )
      : null,
    h(
      "header",
      {},
      h("span", { class: "seq" }, `#${seq}`),
      h(
        "span",
        { class: `speaker speaker-${block.speaker.replace(/[^a-zA-Z]/g, "")}` },
        block.speaker,
      ),
      h("time", { title: "UTC" }, formatTime(event.timestamp ?? stored.createdAt)),
      off ? h("span", { class: "badge" }, "off the current branch") : null,
      block.inline ? h("span", { class: "inline" }, block.inline) : null,
    ),
    block.body ? h("div", { class: "body" }, block.body) : null,
  );
}
