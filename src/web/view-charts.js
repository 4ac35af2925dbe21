// The charts of the home page: storage per agent by table family, cron runs per day, delivery
// queues, and (from view-usage.js) token usage and events per day. Each chart has its numbers in a table under it; the same data is JSON under
// /api/charts/….

import { api } from "./api.js";
import { COLORS, stackedBars } from "./charts.js";
import { formatBytes, formatTime, h, replace, table } from "./dom.js";
import { renderUsage } from "./view-usage.js";

const CRON_DAYS = 30;
const FAMILY_TITLES = {
  events: "Events",
  blobs: "Blobs",
  vfs: "VFS",
  fts: "FTS index",
  other: "Other",
};
const number = (n) => (n === null || n === undefined ? "-" : n.toLocaleString("en-US"));
const day = (ms) => new Date(ms).toISOString().slice(0, 10);

function chartBox(name, label) {
  return h("div", {
    class: "chart",
    "data-chart": name,
    role: "img",
    "aria-label": `${label}: a chart; its numbers are in the table below it`,
  });
}

function storageSection({ families, agents }) {
  const measured = agents.filter((a) => a.storage !== null);
  const box = chartBox("storage", "Storage per agent by table family");
  const columns = [
    { title: "Agent", cell: (a) => a.agentId },
    ...families.map((f) => ({
      title: FAMILY_TITLES[f],
      class: "num",
      cell: (a) => number(a.storage?.families[f]),
    })),
    { title: "Free", class: "num", cell: (a) => number(a.storage?.freeBytes) },
    { title: "File", class: "num", cell: (a) => number(a.storage?.fileBytes) },
  ];
  const source = measured[0]?.storage.source ?? "dbstat";
  const node = h(
    "section",
    { class: "chart-section", id: "storage" },
    h("h2", {}, "Storage per agent"),
    h(
      "p",
      { class: "muted" },
      `Bytes by table family, counted with ${source}; indexes count with their table.`,
    ),
    box,
    table(columns, agents, { id: "storage-table", caption: "Storage per agent, in bytes" }),
  );
  const draw = () =>
    measured.length === 0
      ? null
      : stackedBars(box, {
          labels: measured.map((a) => a.agentId),
          bytes: true,
          yFormat: formatBytes,
          series: families.map((f) => ({
            label: FAMILY_TITLES[f],
            color: COLORS[f],
            values: measured.map((a) => a.storage.families[f]),
          })),
        });
  return { node, draws: [draw] };
}

function cronRows({ days, jobs }) {
  return jobs.flatMap((job) =>
    days
      .map((ms, i) => ({
        job: job.jobId,
        day: day(ms),
        ok: job.counts.ok[i],
        error: job.counts.error[i],
        skipped: job.counts.skipped[i],
      }))
      .filter((r) => r.ok + r.error + r.skipped > 0),
  );
}

function cronJob(days, job) {
  const box = chartBox(`cron-${job.jobId}`, `Runs per day of cron job ${job.jobId}`);
  const node = h(
    "div",
    { class: "cron-job" },
    h(
      "h3",
      {},
      job.name ?? job.jobId,
      job.name ? h("span", { class: "muted" }, ` (${job.jobId})`) : null,
    ),
    box,
    h(
      "p",
      { class: job.lastError ? "bad wrap" : "muted" },
      job.lastError
        ? `Last error ${formatTime(job.lastError.at)} UTC: ${job.lastError.error ?? "(no message)"}`
        : "No failed run in the log.",
    ),
  );
  const draw = () =>
    stackedBars(box, {
      days,
      series: ["ok", "error", "skipped"].map((s) => ({
        label: s,
        color: COLORS[s],
        values: job.counts[s],
      })),
    });
  return { node, draw };
}

function cronSection(activity) {
  const jobs = activity.jobs.map((job) => cronJob(activity.days, job));
  const columns = [
    { title: "Job", cell: (r) => r.job },
    { title: "Day", cell: (r) => r.day },
    { title: "OK", class: "num", cell: (r) => number(r.ok) },
    { title: "Error", class: "num", cell: (r) => number(r.error) },
    { title: "Skipped", class: "num", cell: (r) => number(r.skipped) },
  ];
  const node = h(
    "section",
    { class: "chart-section", id: "cron" },
    h("h2", {}, "Cron runs per day"),
    h("p", { class: "muted" }, `The last ${activity.days.length} days, by UTC day.`),
    activity.jobs.length === 0 ? h("p", { class: "empty" }, "No cron jobs in this home.") : null,
    jobs.map((j) => j.node),
    table(columns, cronRows(activity), {
      id: "cron-table",
      caption: "Cron runs per job and day",
      empty: "No cron runs in this window.",
    }),
  );
  return { node, draws: jobs.map((j) => j.draw) };
}

function deliveriesSection({ queues }) {
  const box = chartBox("deliveries", "Delivery queue depth and dead letters");
  const parts = [
    ["pending", "Pending"],
    ["sending", "Sending"],
    ["unknown", "Unknown"],
    ["deadLetters", "Dead letters"],
  ];
  const columns = [
    { title: "Queue", cell: (q) => q.queue },
    ...parts.map(([key, title]) => ({ title, class: "num", cell: (q) => number(q[key]) })),
    { title: "Depth", class: "num", cell: (q) => number(q.depth) },
    {
      title: "Last dead letter",
      class: "wrap",
      cell: (q) =>
        q.lastDeadLetter
          ? `${formatTime(q.lastDeadLetter.at)} UTC: ${q.lastDeadLetter.error ?? ""}`
          : "-",
    },
  ];
  const node = h(
    "section",
    { class: "chart-section", id: "deliveries" },
    h("h2", {}, "Delivery queues"),
    h(
      "p",
      { class: "muted" },
      "Depth is pending + sending + unknown; dead letters were given up on.",
    ),
    queues.length === 0 ? null : box,
    table(columns, queues, {
      id: "deliveries-table",
      caption: "Delivery queues: depth and dead letters",
      empty: "No delivery waiting, in flight or dead.",
    }),
  );
  const draw = () =>
    queues.length === 0
      ? null
      : stackedBars(box, {
          labels: queues.map((q) => q.queue),
          series: parts.map(([key, title]) => ({
            label: title,
            color: COLORS[key],
            values: queues.map((q) => q[key]),
          })),
        });
  return { node, draws: [draw] };
}

/** The usage section's place: filled by `renderUsage`, which reads the usage rollups. */
function usageSection() {
  return h(
    "section",
    { class: "chart-section", id: "usage" },
    h("h2", {}, "Token usage and events per day"),
  );
}

/** Renders every chart section into `slot`; returns a cleanup that destroys the charts. */
export async function renderCharts(slot, isCurrent) {
  const [storage, cron, deliveries] = await Promise.all([
    api("charts/storage"),
    api("charts/cron", { days: CRON_DAYS }),
    api("charts/deliveries"),
  ]);
  if (!isCurrent()) return () => {};
  const sections = [storageSection(storage), cronSection(cron), deliveriesSection(deliveries)];
  const usage = usageSection();
  replace(
    slot,
    sections.map((s) => s.node),
    usage,
  );
  // Drawn once in the page: a chart takes its width from its container.
  const charts = sections.flatMap((s) => s.draws.map((draw) => draw())).filter(Boolean);
  const destroyUsage = await renderUsage(usage, isCurrent);
  return () => {
    destroyUsage();
    for (const chart of charts) chart.destroy();
  };
}
