// A session's own token usage and recorded cost, by model, with a total row: read from
// /api/agents/:agentId/transcripts/:sessionId/usage, which sums that session's events (from its
// archive when it is cold).

import { h, table } from "./dom.js";

const number = (n) => n.toLocaleString("en-US");
// Recorded costs are small fractions; four places keep a cent's hundredths visible.
const money = (n) => n.toFixed(4);

function modelName(row) {
  const name = [row.provider, row.model].filter((part) => part !== "").join("/");
  return name === "" ? "(no model)" : name;
}

const COLUMNS = [
  { title: "Model", cell: (r) => r.name },
  { title: "Messages", class: "num", cell: (r) => number(r.messages) },
  { title: "Input", class: "num", cell: (r) => number(r.inputTokens) },
  { title: "Output", class: "num", cell: (r) => number(r.outputTokens) },
  { title: "Cache read", class: "num", cell: (r) => number(r.cacheReadTokens) },
  { title: "Cache write", class: "num", cell: (r) => number(r.cacheWriteTokens) },
  { title: "Total tokens", class: "num", cell: (r) => number(r.totalTokens) },
  { title: "Cost", class: "num", cell: (r) => money(r.cost) },
  { title: "Priced", class: "num", cell: (r) => `${r.pricedMessages} / ${r.messages}` },
];

/** The usage section of a session page; the model rows leave out events that are no message. */
export function sessionUsagePanel(report) {
  const models = report.models.filter((m) => m.messages > 0);
  const rows = [
    ...models.map((m) => ({ ...m, name: modelName(m) })),
    { ...report.totals, name: "Total" },
  ];
  const unpriced = report.totals.messages - report.totals.pricedMessages;
  return h(
    "section",
    { class: "session-usage", "aria-labelledby": "session-usage-title" },
    h("h2", { id: "session-usage-title" }, "Usage and cost"),
    report.totals.messages === 0
      ? h("p", { class: "empty", id: "session-usage-table" }, "No assistant messages yet.")
      : table(COLUMNS, rows, {
          id: "session-usage-table",
          caption: "Tokens and recorded cost of this session's assistant messages, by model",
          rowAttrs: (r) => (r === rows.at(-1) ? { class: "total" } : {}),
        }),
    h(
      "p",
      { class: "muted" },
      report.cold ? "Read from the session's cold archive. " : "",
      unpriced > 0 ? `${unpriced} messages recorded no cost (no price is estimated).` : "",
    ),
  );
}
