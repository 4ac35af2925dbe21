// Views of one agent: its session entries (filtered, paged, refreshed live), one key's history,
// the sessions that have a transcript, and its memory.

import { api, apiPath, subscribe } from "./api.js";
import { formatTime, h, link, replace, route, shortId, table, timeCell } from "./dom.js";
import { setLive } from "./live.js";
import { inboundPanels } from "./view-inbound.js";

const PAGE = 50;

function tabs(agentId, current) {
  const tab = (parts, name) =>
    h("a", { href: route(parts), class: current === name ? "tab current" : "tab" }, name);
  return [
    h("p", { class: "crumbs" }, link([], "Agents"), " / ", h("strong", {}, agentId)),
    h(
      "nav",
      { class: "tabs", "aria-label": "agent" },
      tab(["agents", agentId], "Sessions"),
      tab(["agents", agentId, "transcripts"], "Transcripts"),
      tab(["agents", agentId, "memory"], "Memory"),
    ),
  ];
}

function sessionLink(agentId, sessionId, text, params) {
  return h(
    "a",
    { href: route(["agents", agentId, "sessions", sessionId], params), class: "session-link" },
    text,
  );
}

function entryColumns(agentId) {
  return [
    {
      title: "Key",
      class: "wrap",
      cell: (e) =>
        link(["agents", agentId, "keys", e.sessionKey], e.sessionKey, { class: "key-link" }),
    },
    { title: "Label", cell: (e) => e.label ?? "-" },
    { title: "Chat", class: "hide-narrow", cell: (e) => e.chatType ?? "-" },
    { title: "Channel", class: "hide-narrow", cell: (e) => e.channel ?? "-" },
    { title: "Model", class: "hide-narrow", cell: (e) => e.model ?? "-" },
    { title: "Last activity", cell: (e) => timeCell(e.updatedAt) },
    { title: "Events", class: "num", cell: (e) => e.session?.eventCount ?? "-" },
    {
      title: "Conversation",
      cell: (e) =>
        e.sessionId
          ? sessionLink(agentId, e.sessionId, [
              shortId(e.sessionId),
              e.session?.endedAt ? " (ended)" : "",
            ])
          : "-",
    },
  ];
}

function filterForm(query, onSubmit) {
  const since = query.get("since") ?? "";
  return h(
    "form",
    { class: "filters", onsubmit: onSubmit },
    h(
      "label",
      {},
      "Key starts with ",
      h("input", {
        name: "prefix",
        value: query.get("prefix") ?? "",
        placeholder: "agent:main:",
        autocomplete: "off",
      }),
    ),
    h(
      "label",
      {},
      "Updated since ",
      h("input", { name: "since", type: "datetime-local", value: since }),
    ),
    ...TEXT_FILTERS.map(([name, title, placeholder]) =>
      h(
        "label",
        {},
        `${title} `,
        h("input", { name, value: query.get(name) ?? "", placeholder, autocomplete: "off" }),
      ),
    ),
    choice(query, "archived", "Archived ", [
      ["", "any"],
      ["false", "no"],
      ["true", "yes"],
    ]),
    choice(query, "pinned", "Pinned ", [
      ["", "any"],
      ["true", "yes"],
      ["false", "no"],
    ]),
    choice(query, "sort", "Sort by ", SORTS),
    h("button", { type: "submit" }, "Filter"),
  );
}

/** The list's exact-match filters: query name, label, placeholder. */
const TEXT_FILTERS = [
  ["status", "Status", "done, failed …"],
  ["channel", "Channel", "telegram …"],
  ["model", "Model", ""],
  ["label", "Label", ""],
];
const SORTS = [
  ["", "last update"],
  ["activity", "last activity"],
  ["status", "status"],
  ["channel", "channel"],
  ["model", "model"],
  ["label", "label"],
];
const FILTER_NAMES = ["prefix", "since", ...TEXT_FILTERS.map(([name]) => name)];
const CHOICE_NAMES = ["archived", "pinned", "sort"];

function choice(query, name, title, options) {
  const current = query.get(name) ?? "";
  return h(
    "label",
    {},
    title,
    h(
      "select",
      { name },
      ...options.map(([value, text]) =>
        h("option", value === current ? { value, selected: "" } : { value }, text),
      ),
    ),
  );
}

export async function sessionsView({ root, params: [agentId], query, isCurrent }) {
  const filters = {
    prefix: query.get("prefix") ?? undefined,
    // datetime-local has no zone: read as UTC, like every time the dashboard shows.
    updatedSince: query.get("since") ? Date.parse(`${query.get("since")}Z`) : undefined,
  };
  for (const name of [...TEXT_FILTERS.map(([name]) => name), ...CHOICE_NAMES]) {
    filters[name] = query.get(name) || undefined;
  }
  let entries = [];
  let cursor = null;
  const tableSlot = h("div", {});
  const more = h("button", { type: "button", class: "more" }, "Load more");
  const draw = () => {
    replace(
      tableSlot,
      table(entryColumns(agentId), entries, { empty: "No session entries match." }),
    );
    more.hidden = cursor === null;
  };
  const load = async (reset) => {
    const limit = reset ? Math.min(1000, Math.max(PAGE, entries.length)) : PAGE;
    const page = await api(apiPath("agents", agentId, "sessions"), {
      ...filters,
      limit,
      cursor: reset ? undefined : cursor,
    });
    entries = reset ? page.entries : [...entries, ...page.entries];
    cursor = page.nextCursor;
    if (isCurrent()) draw();
  };
  await load(true);
  if (!isCurrent()) return;
  more.addEventListener("click", () => load(false));
  const onSubmit = (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    const next = {};
    for (const name of [...FILTER_NAMES, ...CHOICE_NAMES]) {
      if (form.get(name)) next[name] = form.get(name);
    }
    location.hash = route(["agents", agentId], next);
  };
  replace(root, tabs(agentId, "Sessions"), filterForm(query, onSubmit), tableSlot, more);
  draw();
  // Another process changed the agent's database: reload the rows on screen, at most once a second.
  let pending = false;
  const stream = subscribe(
    apiPath("agents", agentId, "stream"),
    {
      change: () => {
        if (pending) return;
        pending = true;
        setTimeout(() => {
          pending = false;
          if (isCurrent()) load(true).catch(() => {});
        }, 1000);
      },
    },
    setLive,
  );
  return () => stream.close();
}

export async function keyView({ root, params: [agentId, key], isCurrent }) {
  const [{ entry, history }, inbound] = await Promise.all([
    api(apiPath("agents", agentId, "sessions", key)),
    inboundPanels(agentId, key),
  ]);
  if (!isCurrent()) return;
  const activeId = entry?.entry?.sessionId;
  const fields = entry ? Object.entries(entry.entry).map(([name, value]) => ({ name, value })) : [];
  replace(
    root,
    tabs(agentId, "Sessions"),
    h("h1", { class: "wrap" }, key),
    entry
      ? h(
          "p",
          { class: "muted" },
          `version ${entry.version}, updated ${formatTime(entry.updatedAt)} UTC`,
        )
      : h("p", { class: "muted" }, "No entry: only its sessions remain."),
    h("h2", {}, "Sessions of this key (oldest first)"),
    table(
      [
        { title: "", cell: (s) => (s.sessionId === activeId ? "●" : "") },
        { title: "Session", cell: (s) => sessionLink(agentId, s.sessionId, shortId(s.sessionId)) },
        { title: "Created", cell: (s) => formatTime(s.createdAt) },
        {
          title: "Ended",
          class: "hide-narrow",
          cell: (s) => (s.endedAt ? formatTime(s.endedAt) : "-"),
        },
        { title: "Reason", cell: (s) => s.resetReason ?? "-" },
        { title: "Events", class: "num", cell: (s) => s.eventCount },
      ],
      history,
      { empty: "No sessions." },
    ),
    inbound,
    h("h2", {}, "Entry"),
    table(
      [
        { title: "Field", cell: (f) => h("code", {}, f.name) },
        { title: "Value", class: "wrap", cell: (f) => fieldValue(f.value) },
      ],
      fields,
      { empty: "No fields." },
    ),
  );
}

function fieldValue(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text.length <= 300) return text;
  return h(
    "details",
    {},
    h("summary", {}, `${text.slice(0, 120)}… (${text.length.toLocaleString("en-US")} characters)`),
    h("pre", {}, JSON.stringify(value, null, 2)),
  );
}

export async function transcriptsView({ root, params: [agentId], isCurrent }) {
  const { sessions } = await api(apiPath("agents", agentId, "transcripts"), { limit: 200 });
  if (!isCurrent()) return;
  replace(
    root,
    tabs(agentId, "Transcripts"),
    h(
      "p",
      { class: "muted" },
      "Sessions with a transcript, most recently updated first (also those without a key).",
    ),
    table(
      [
        { title: "Session", cell: (s) => sessionLink(agentId, s.sessionId, s.sessionId) },
        { title: "Last activity", cell: (s) => timeCell(s.updatedAt) },
        { title: "Events", class: "num", cell: (s) => s.eventCount },
      ],
      sessions,
      { empty: "No transcripts." },
    ),
  );
}

function factValue(fact) {
  if (fact.sensitivity === "secret_ref") {
    return h(
      "span",
      { class: "secret" },
      "secret → ",
      fact.reference ? h("code", {}, fact.reference) : "(reference withheld)",
    );
  }
  if (fact.redacted) return h("span", { class: "muted" }, "(sensitive: hidden)");
  return fact.value;
}

export async function memoryView({ root, params: [agentId], query, isCurrent }) {
  const includeSensitive = query.get("sensitive") === "1";
  const [{ topics }, { facts }] = await Promise.all([
    api(apiPath("agents", agentId, "memory", "topics")),
    api(apiPath("agents", agentId, "memory", "facts"), {
      includeSensitive: includeSensitive ? "true" : undefined,
      limit: 1000,
    }),
  ]);
  if (!isCurrent()) return;
  const toggle = h("input", {
    type: "checkbox",
    checked: includeSensitive,
    onchange: (e) => {
      location.hash = route(
        ["agents", agentId, "memory"],
        e.target.checked ? { sensitive: "1" } : undefined,
      );
    },
  });
  replace(
    root,
    tabs(agentId, "Memory"),
    h("h2", {}, "Topics"),
    table(
      [
        {
          title: "",
          cell: (t) => (t.active ? h("span", { title: "the session's active topic" }, "●") : ""),
        },
        {
          title: "Title",
          class: "wrap",
          cell: (t) => [
            h("strong", {}, t.title),
            t.summaryShort ? h("div", { class: "muted" }, t.summaryShort) : null,
          ],
        },
        { title: "Status", cell: (t) => t.status },
        {
          title: "Session",
          class: "hide-narrow",
          cell: (t) => sessionLink(agentId, t.sessionId, shortId(t.sessionId)),
        },
        {
          title: "Open loops",
          class: "wrap",
          cell: (t) =>
            t.openLoops.length
              ? h(
                  "ul",
                  {},
                  t.openLoops.map((l) => h("li", {}, l)),
                )
              : "-",
        },
        { title: "Labels", class: "hide-narrow", cell: (t) => t.labels.join(", ") || "-" },
        { title: "Last active", cell: (t) => timeCell(t.lastActiveAt) },
      ],
      topics,
      { empty: "No topics." },
    ),
    h("h2", {}, "Facts"),
    h(
      "label",
      { class: "toggle" },
      toggle,
      " show sensitive values (secret references never show a secret)",
    ),
    table(
      [
        { title: "Scope", cell: (f) => f.scope },
        { title: "Key", cell: (f) => h("code", {}, f.key) },
        { title: "Value", class: "wrap", cell: factValue },
        { title: "Category", class: "hide-narrow", cell: (f) => f.category },
        { title: "Sensitivity", cell: (f) => f.sensitivity },
        { title: "Recall", class: "hide-narrow", cell: (f) => f.recallPolicy },
        { title: "Confidence", class: "num hide-narrow", cell: (f) => f.confidence.toFixed(2) },
      ],
      facts,
      { empty: "No facts." },
    ),
  );
}
