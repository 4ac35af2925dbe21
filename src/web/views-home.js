// Views of the whole home: its overview (agents with their activity, size and health, totals,
// charts), and the audit trail of migration and backup runs.

import { api, apiPath } from "./api.js";
import { formatBytes, formatTime, h, link, replace, table, timeCell } from "./dom.js";
import { renderCharts } from "./view-charts.js";

const checkClass = (result) => (result === "ok" ? "ok" : result === "not run" ? "muted" : "bad");

function statusBlock(status, runCheck) {
  const rows = status.databases.map((db) => ({
    ...db,
    sessions: db.tables.sessions,
    events: db.tables.transcript_events,
  }));
  return h(
    "section",
    {},
    h("h2", {}, "Databases"),
    h(
      "p",
      { class: "muted" },
      "Home ",
      h("code", {}, status.home),
      status.server.write ? " · writes enabled" : " · read-only",
    ),
    status.databases.some((d) => d.quickCheck === "not run")
      ? h("button", { type: "button", class: "more", onclick: runCheck }, "Run the integrity check")
      : null,
    table(
      [
        { title: "Role", cell: (d) => d.role },
        { title: "Agent", cell: (d) => d.agentId ?? "-" },
        { title: "Size", class: "num", cell: (d) => formatBytes(d.bytes) },
        { title: "Schema", class: "num", cell: (d) => d.schemaVersion },
        { title: "Sessions", class: "num hide-narrow", cell: (d) => d.sessions ?? "-" },
        { title: "Events", class: "num hide-narrow", cell: (d) => d.events ?? "-" },
        {
          title: "Check",
          cell: (d) => h("span", { class: checkClass(d.quickCheck) }, d.quickCheck),
        },
      ],
      rows,
    ),
  );
}

function agentHealth(a) {
  if (!a.present) return h("span", { class: "bad" }, "missing");
  if (a.damaged)
    return h("span", { class: "bad", title: a.damaged.problems.join("\n") }, "damaged");
  const check = a.lastBackup?.integrityCheck;
  if (check === undefined) return h("span", { class: "muted" }, "no backup yet");
  return h(
    "span",
    { class: checkClass(check), title: "integrity_check of its last backup" },
    check,
  );
}

const schemaCell = ({ version, latest }) =>
  version === latest ? String(version) : h("span", { class: "bad" }, `${version} of ${latest}`);

function agentsTable(agents) {
  return table(
    [
      {
        title: "Agent",
        cell: (a) => link(["agents", a.agentId], a.agentId, { class: "agent-link" }),
      },
      { title: "Size", class: "num", cell: (a) => formatBytes(a.bytes) },
      {
        title: "Last activity",
        cell: (a) => (a.lastActivityAt === null ? "-" : timeCell(a.lastActivityAt)),
      },
      { title: "Sessions", class: "num", cell: (a) => a.sessions ?? "-" },
      { title: "Events", class: "num", cell: (a) => a.events ?? "-" },
      { title: "Schema", class: "num hide-narrow", cell: (a) => schemaCell(a.schema) },
      {
        title: "Last backup",
        cell: (a) =>
          a.lastBackup ? timeCell(a.lastBackup.at) : h("span", { class: "muted" }, "never"),
      },
      { title: "Check", cell: agentHealth },
      {
        title: "",
        cell: (a) => [
          link(["agents", a.agentId, "memory"], "memory"),
          " · ",
          link(["agents", a.agentId, "transcripts"], "transcripts"),
        ],
      },
    ],
    agents,
    { id: "agents-table", empty: "No agents in this home yet." },
  );
}

/** "12 MB of 2.0 GB budget, 1 MB over", or the bytes alone without a budget. */
function ofBudget(bytes, budget) {
  if (!budget) return formatBytes(bytes);
  const over = budget.overBytes > 0 ? `, ${formatBytes(budget.overBytes)} over` : "";
  return `${formatBytes(bytes)} of ${formatBytes(budget.maxDiskBytes)} budget${over}`;
}

function diskSection(disk) {
  const note = disk.budget
    ? `Every file of the home counts: ${ofBudget(disk.homeBytes, disk.budget)}; gc works down to ${formatBytes(disk.budget.highWaterBytes)}.`
    : `Every file of the home: ${formatBytes(disk.homeBytes)}. No budget set (agentstate.json maintenance.maxDiskBytes).`;
  return h(
    "section",
    { id: "disk" },
    h("h2", {}, "Disk"),
    h("p", { class: disk.budget?.overBytes > 0 ? "bad" : "muted", id: "disk-home" }, note),
    disk.policyError ? h("p", { class: "error" }, `Budget unknown: ${disk.policyError}`) : null,
    table(
      [
        { title: "Agent", cell: (a) => a.agentId },
        { title: "Hot", class: "num", cell: (a) => formatBytes(a.hotBytes) },
        { title: "Cold", class: "num", cell: (a) => formatBytes(a.coldBytes) },
        { title: "Total", class: "num", cell: (a) => ofBudget(a.totalBytes, a.budget) },
      ],
      disk.agents,
      {
        id: "disk-table",
        caption: "Hot bytes (database, -wal, -shm) and cold bytes (archives) per agent",
      },
    ),
  );
}

function homeSummary({ totals, lastBackup, migration }) {
  const run = migration.lastRun;
  const sources = Object.entries(migration.sources)
    .map(([status, n]) => `${n} ${status}`)
    .join(", ");
  const item = (title, key, ...value) =>
    h("div", {}, h("dt", {}, title), h("dd", key ? { "data-total": key } : {}, ...value));
  return h(
    "dl",
    { class: "home-totals", id: "home-totals" },
    item("Agents", "agents", totals.agents),
    item("Sessions", "sessions", totals.sessions),
    item("Events", "events", totals.events),
    item("Size", "bytes", h("span", { title: `${totals.bytes} bytes` }, formatBytes(totals.bytes))),
    item(
      "Last backup",
      null,
      lastBackup ? [timeCell(lastBackup.at), " ", runStatus(lastBackup.status)] : "never",
    ),
    item(
      "Migration",
      null,
      run ? [runStatus(run.status), " ", timeCell(run.startedAt)] : "never migrated",
      sources ? h("span", { class: "muted" }, ` · sources: ${sources}`) : null,
    ),
  );
}

export async function agentsView({ root, isCurrent }) {
  const overview = await api("overview");
  if (!isCurrent()) return;
  const chartsSlot = h("div", { class: "charts" }, h("p", { class: "loading" }, "Drawing charts…"));
  const statusSlot = h("div", {}, h("p", { class: "loading" }, "Reading databases…"));
  replace(
    root,
    h("h1", {}, "Home"),
    homeSummary(overview),
    h("h2", {}, "Agents"),
    agentsTable(overview.agents),
    diskSection(overview.disk),
    chartsSlot,
    statusSlot,
  );
  let destroyCharts = () => {};
  let left = false;
  renderCharts(chartsSlot, () => isCurrent() && !left)
    .then((destroy) => {
      destroyCharts = destroy;
    })
    .catch(
      (error) => isCurrent() && replace(chartsSlot, h("p", { class: "error" }, error.message)),
    );
  // Shown when ready, not waited for; the integrity check reads whole databases, so on request.
  const showStatus = (check) =>
    api("status", { check: check ? "true" : undefined })
      .then(
        (status) =>
          isCurrent() &&
          replace(
            statusSlot,
            statusBlock(status, () => showStatus(true)),
          ),
      )
      .catch(
        (error) => isCurrent() && replace(statusSlot, h("p", { class: "error" }, error.message)),
      );
  showStatus(false);
  return () => {
    left = true;
    destroyCharts();
  };
}

const runStatus = (status) => h("span", { class: `status status-${status}` }, status);

export async function historyView({ root, isCurrent }) {
  const [migrations, backups] = await Promise.all([api("migrations"), api("backups")]);
  if (!isCurrent()) return;
  replace(
    root,
    h("h1", {}, "History"),
    h("h2", {}, "Migration runs"),
    table(
      [
        { title: "Run", cell: (r) => link(["history", "migrations", r.id], r.id) },
        { title: "Started", cell: (r) => timeCell(r.startedAt) },
        {
          title: "Finished",
          class: "hide-narrow",
          cell: (r) => (r.finishedAt ? formatTime(r.finishedAt) : "-"),
        },
        { title: "Status", cell: (r) => runStatus(r.status) },
        { title: "Problems", class: "num", cell: (r) => r.problemCount ?? "-" },
        { title: "Quarantined", class: "num", cell: (r) => r.quarantined },
      ],
      migrations.runs,
      { empty: "No migrations recorded: this home was never migrated from legacy files." },
    ),
    h("h2", {}, "Backup runs"),
    table(
      [
        { title: "Created", cell: (b) => timeCell(b.createdAt) },
        { title: "Status", cell: (b) => runStatus(b.status) },
        { title: "Databases", class: "num", cell: (b) => b.databases ?? "-" },
        { title: "Files", class: "num hide-narrow", cell: (b) => b.files ?? "-" },
        {
          title: "Archive",
          class: "wrap",
          cell: (b) => [
            h("code", {}, b.archive),
            b.archiveExists ? null : h("span", { class: "muted" }, " (gone)"),
            b.error ? h("div", { class: "bad" }, b.error) : null,
          ],
        },
      ],
      backups.runs,
      { empty: "No backups recorded." },
    ),
  );
}

const where = (p) =>
  p.line !== null ? `${p.path}:${p.line}` : p.key !== null ? `${p.path} [${p.key}]` : p.path;

/** Each problem of the run by file and line, and whether its line is kept in quarantine. */
function problemsTable(problems) {
  return table(
    [
      { title: "Where", class: "wrap", cell: (p) => h("code", {}, where(p)) },
      { title: "Reason", class: "wrap", cell: (p) => p.reason },
      {
        title: "Line",
        cell: (p) =>
          p.quarantined ? runStatus("quarantined") : h("span", { class: "bad" }, "source kept"),
      },
    ],
    problems,
    { empty: "No problems: every record of this run's sources was imported." },
  );
}

/** The lines this run kept as bytes; the text is shown as UTF-8, the API has the exact bytes. */
function quarantineTable(lines) {
  return table(
    [
      { title: "Where", class: "wrap", cell: (q) => h("code", {}, `${q.path}:${q.line}`) },
      { title: "Reason", class: "wrap", cell: (q) => q.reason },
      { title: "Bytes", class: "num", cell: (q) => q.bytes },
      { title: "Line", class: "wrap", cell: (q) => h("code", {}, q.text.slice(0, 200)) },
    ],
    lines,
    { empty: "This run quarantined no lines." },
  );
}

export async function migrationView({ root, params: [runId], isCurrent }) {
  const { run, sources, problems, quarantined } = await api(apiPath("migrations", runId));
  if (!isCurrent()) return;
  replace(
    root,
    h(
      "p",
      { class: "crumbs" },
      link(["history"], "History"),
      " / migration ",
      h("code", {}, run.id),
    ),
    h("h1", {}, "Migration run ", runStatus(run.status)),
    h(
      "p",
      { class: "muted" },
      `started ${formatTime(run.startedAt)} UTC`,
      run.finishedAt ? `, finished ${formatTime(run.finishedAt)} UTC` : "",
    ),
    table(
      [
        { title: "Source", class: "wrap", cell: (s) => h("code", {}, s.path) },
        { title: "Kind", cell: (s) => s.kind },
        { title: "Into", class: "hide-narrow", cell: (s) => s.targetTable },
        { title: "Records", class: "num", cell: (s) => s.recordCount },
        { title: "Size", class: "num hide-narrow", cell: (s) => formatBytes(s.sizeBytes) },
        {
          title: "Status",
          cell: (s) => [
            runStatus(s.status),
            s.removedSource ? h("span", { class: "muted" }, " · removed") : null,
          ],
        },
      ],
      sources,
      { empty: "No sources in this run." },
    ),
    h("h2", {}, `Problems (${problems.length})`),
    problemsTable(problems),
    h("h2", {}, `Quarantined lines (${quarantined.length})`),
    quarantineTable(quarantined),
  );
}
