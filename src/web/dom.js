// DOM building without HTML strings: every piece of data becomes a text node or an attribute
// value, so a transcript can never inject markup or script into the page.

/**
 * An element: `h("a", { href: "#/x", class: "link", onclick: fn }, "text", child, [more])`.
 * Strings and numbers become text nodes; null, undefined and false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.className = value;
    else if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A hash link inside the app; every part is URI-encoded, so data cannot change the route. */
export function link(parts, text, attrs = {}) {
  return h("a", { ...attrs, href: route(parts) }, text);
}

export function route(parts, params) {
  const path = parts.map((p) => encodeURIComponent(String(p))).join("/");
  const query = params ? new URLSearchParams(params).toString() : "";
  return `#/${path}${query ? `?${query}` : ""}`;
}

/** Text with the given [start, end) ranges wrapped in <mark>, built node by node. */
export function highlighted(text, ranges) {
  const out = [];
  let at = 0;
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  for (const [start, end] of sorted) {
    if (start < at || end <= start || end > text.length) continue;
    if (start > at) out.push(text.slice(at, start));
    out.push(h("mark", {}, text.slice(start, end)));
    at = end;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

const pad = (n) => String(n).padStart(2, "0");

/** `2026-03-04 07:58:03` in UTC, from Unix ms or an ISO string; "-" when unknown. */
export function formatTime(value) {
  const date = new Date(typeof value === "string" ? Date.parse(value) : value);
  if (value === null || value === undefined || Number.isNaN(date.getTime())) return "-";
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`;
}

/** "3 min ago", "2 days ago": how long since `ms`. */
export function formatAge(ms, now = Date.now()) {
  const seconds = Math.round((now - ms) / 1000);
  if (!Number.isFinite(seconds)) return "-";
  if (seconds < 0) return "in the future";
  if (seconds < 60) return `${seconds} s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}

/** A time cell: the age, with the exact UTC time as a tooltip. */
export function timeCell(ms) {
  return h(
    "time",
    { datetime: new Date(ms).toISOString(), title: `${formatTime(ms)} UTC` },
    formatAge(ms),
  );
}

export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined) return "-";
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${bytes} B`;
}

/**
 * A table with a header row; `columns` are `{ title, cell(row) → node|text, class? }`. `caption`
 * names it for a screen reader (and on the page); `id` goes on the table.
 */
export function table(columns, rows, { empty = "nothing here", rowAttrs, caption, id } = {}) {
  if (rows.length === 0) return h("p", { class: "empty", id }, empty);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id },
      caption ? h("caption", {}, caption) : null,
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          columns.map((c) => h("th", { class: c.class }, c.title)),
        ),
      ),
      h(
        "tbody",
        {},
        rows.map((row) =>
          h(
            "tr",
            rowAttrs ? rowAttrs(row) : {},
            // data-title labels each cell when a narrow screen shows rows as cards.
            columns.map((c) =>
              h("td", { class: c.class, "data-title": c.title || null }, h("div", {}, c.cell(row))),
            ),
          ),
        ),
      ),
    ),
  );
}

/** A short form of a long id for display; the full id stays in the tooltip. */
export function shortId(id) {
  const text = String(id);
  return h("span", { class: "id", title: text }, text.length > 13 ? `${text.slice(0, 8)}…` : text);
}
