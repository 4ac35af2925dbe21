// The home page's usage charts: events per agent per day, tokens per day and recorded cost per
// day, each with its numbers in a table. Read from /api/usage and /api/usage/events, which sum
// the agents' daily rollups, so a page view never scans the transcript events.

import { api } from "./api.js";
import { COLORS, stackedBars } from "./charts.js";
import { h, replace, table } from "./dom.js";

const DAY = 86_400_000;
const RANGES = [30, 90];
// Agents are open-ended, so their colours cycle; the first ones match the other charts' palette.
const AGENT_COLORS = ["#1f4e79", "#8a5a00", "#2e8b57", "#7b4fa0", "#b3261e", "#4f8fc9", "#c9a227"];
const TOKENS = [
  ["inputTokens", "Input", COLORS.events],
  ["outputTokens", "Output", COLORS.blobs],
  ["cacheReadTokens", "Cache read", COLORS.vfs],
  ["cacheWriteTokens", "Cache write", COLORS.fts],
];
const number = (n) => (n === null || n === undefined ? "-" : n.toLocaleString("en-US"));
// Recorded costs are small fractions; four places keep a cent's hundredths visible.
const money = (n) => (n === null || n === undefined ? "-" : n.toFixed(4));
const dayOf = (ms) => new Date(ms).toISOString().slice(0, 10);

/** UTC day starts (ms) of the last `count` days, today last. */
function dayStarts(count, now = Date.now()) {
  const today = Math.floor(now / DAY) * DAY;
  return Array.from({ length: count }, (_, i) => today - (count - 1 - i) * DAY);
}

function chartBox(name, label) {
  return h("div", {
    class: "chart",
    "data-chart": name,
    role: "img",
    "aria-label": `${label}: a chart; its numbers are in the table below it`,
  });
}

/** One value per day of `days` from rows keyed by `day` (YYYY-MM-DD); missing days are 0. */
function perDay(days, rows, value) {
  const byDay = new Map(rows.map((r) => [r.day, value(r)]));
  return days.map((ms) => byDay.get(dayOf(ms)) ?? 0);
}

function eventsPart(days, events) {
  const agents = [...new Set(events.map((e) => e.agentId))].sort();
  const box = chartBox("usage-events", "Events per agent per day");
  const columns = [
    { title: "Agent", cell: (r) => r.agentId },
    { title: "Day", cell: (r) => r.day },
    { title: "Events", class: "num", cell: (r) => number(r.events) },
  ];
  const rows = events.filter((r) => r.events > 0);
  const node = [
    h("h3", {}, "Events per agent"),
    rows.length === 0 ? null : box,
    table(columns, rows, {
      id: "usage-events-table",
      caption: "Events per agent and UTC day",
      empty: "No events in this window.",
    }),
  ];
  const draw = () =>
    rows.length === 0
      ? null
      : stackedBars(box, {
          days,
          series: agents.map((agentId, i) => ({
            label: agentId,
            color: AGENT_COLORS[i % AGENT_COLORS.length],
            values: perDay(
              days,
              events.filter((e) => e.agentId === agentId),
              (r) => r.events,
            ),
          })),
        });
  return { node, draw };
}

function tokenColumns() {
  return [
    { title: "Day", cell: (g) => g.day },
    ...TOKENS.map(([key, title]) => ({ title, class: "num", cell: (g) => number(g[key]) })),
    { title: "Cost", class: "num", cell: (g) => money(g.cost) },
    {
      title: "Priced / messages",
      class: "num",
      cell: (g) => `${g.pricedMessages} / ${g.messages}`,
    },
  ];
}

function tokensPart(days, report) {
  const groups = report.groups.filter((g) => g.messages > 0);
  const tokens = chartBox("usage-tokens", "Tokens per day");
  const cost = chartBox("usage-cost", "Recorded cost per day");
  const node = [
    h("h3", {}, "Tokens and recorded cost"),
    groups.length === 0 ? null : [tokens, cost],
    table(tokenColumns(), groups, {
      id: "usage-tokens-table",
      caption: "Tokens and recorded cost per UTC day",
      empty: "No assistant messages in this window.",
    }),
  ];
  const draws = [
    () =>
      stackedBars(tokens, {
        days,
        yFormat: number,
        series: TOKENS.map(([key, label, color]) => ({
          label,
          color,
          values: perDay(days, groups, (g) => g[key]),
        })),
      }),
    () =>
      stackedBars(cost, {
        days,
        yFormat: (n) => n.toFixed(2),
        series: [{ label: "Cost", color: COLORS.ok, values: perDay(days, groups, (g) => g.cost) }],
      }),
  ];
  return { node, draws: groups.length === 0 ? [] : draws };
}

function totalsTable(totals) {
  const columns = [
    { title: "Events", class: "num", cell: (t) => number(t.events) },
    { title: "Messages", class: "num", cell: (t) => number(t.messages) },
    ...TOKENS.map(([key, title]) => ({ title, class: "num", cell: (t) => number(t[key]) })),
    { title: "Cost", class: "num", cell: (t) => money(t.cost) },
    { title: "Priced", class: "num", cell: (t) => number(t.pricedMessages) },
  ];
  return table(columns, [totals], { id: "usage-totals-table", caption: "Totals over the range" });
}

function rangePicker(count, onPick) {
  const select = h(
    "select",
    { id: "usage-days", onchange: () => onPick(Number(select.value)) },
    RANGES.map((n) => h("option", { value: n, selected: n === count }, `Last ${n} days`)),
  );
  return h("label", { class: "toggle" }, "Range ", select);
}

/**
 * Fills `section` with the usage charts of the last `count` days; returns a cleanup that destroys
 * them. Picking another range redraws the section in place.
 */
export async function renderUsage(section, isCurrent, count = RANGES[0]) {
  const days = dayStarts(count);
  const since = days[0];
  const [report, events] = await Promise.all([
    api("usage", { by: "day", since }),
    api("usage/events", { since }),
  ]);
  if (!isCurrent()) return () => {};
  const parts = [eventsPart(days, events.days), tokensPart(days, report)];
  let charts = [];
  const destroy = () => {
    for (const chart of charts) chart.destroy();
    charts = [];
  };
  const pick = (next) => {
    destroy();
    renderUsage(section, isCurrent, next)
      .then((again) => charts.push({ destroy: again }))
      .catch((error) => isCurrent() && replace(section, h("p", { class: "error" }, error.message)));
  };
  replace(
    section,
    h("h2", {}, "Token usage and events per day"),
    h(
      "p",
      { class: "muted" },
      "By UTC day, from the usage rollups. Cost is what the messages recorded: no price is invented.",
    ),
    rangePicker(count, pick),
    totalsTable(report.totals),
    parts.map((p) => p.node),
  );
  charts = [parts[0].draw, ...parts[1].draws].map((draw) => draw?.()).filter(Boolean);
  return destroy;
}
