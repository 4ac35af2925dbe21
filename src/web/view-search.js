// Full-text search: ranked hits across agents, each snippet with its matched words marked, each
// hit a link into its conversation at that event.

import { api } from "./api.js";
import { formatTime, h, highlighted, replace, route, shortId } from "./dom.js";

function hitItem(hit) {
  const href = route(["agents", hit.agentId, "sessions", hit.sessionId], { seq: hit.seq });
  return h(
    "li",
    { class: "hit" },
    h(
      "a",
      { href, class: "hit-link" },
      h(
        "span",
        { class: "hit-where" },
        hit.agentId,
        " · ",
        shortId(hit.sessionId),
        ` · #${hit.seq}`,
      ),
      h(
        "span",
        { class: "hit-what muted" },
        hit.role ?? hit.eventType,
        " · ",
        formatTime(hit.timestamp),
      ),
    ),
    h("p", { class: "snippet" }, highlighted(hit.snippet, hit.highlights)),
  );
}

export async function searchView({ root, query, isCurrent }) {
  const q = query.get("q") ?? "";
  const agentId = query.get("agent") ?? "";
  const [{ agents }, result] = await Promise.all([
    api("agents"),
    q.trim() === ""
      ? Promise.resolve(null)
      : api("search", { q, agentId: agentId || undefined, limit: 50 }),
  ]);
  if (!isCurrent()) return;
  const input = h("input", {
    name: "q",
    type: "search",
    value: q,
    placeholder: "words to find",
    required: true,
    "aria-label": "search query",
  });
  const select = h(
    "select",
    { name: "agent", "aria-label": "agent" },
    h("option", { value: "" }, "all agents"),
    agents.map((a) =>
      h("option", { value: a.agentId, selected: a.agentId === agentId }, a.agentId),
    ),
  );
  const onSubmit = (event) => {
    event.preventDefault();
    const next = { q: input.value.trim() };
    if (select.value) next.agent = select.value;
    if (next.q) location.hash = route(["search"], next);
  };
  replace(
    root,
    h("h1", {}, "Search"),
    h(
      "form",
      { class: "filters search", onsubmit: onSubmit },
      input,
      select,
      h("button", { type: "submit" }, "Search"),
    ),
    result === null
      ? h(
          "p",
          { class: "muted" },
          "Search messages, tool results and summaries of every transcript.",
        )
      : result.hits.length === 0
        ? h("p", { class: "empty" }, "No matches.")
        : [
            h("p", { class: "muted" }, `${result.hits.length} best matches`),
            h("ol", { class: "hits" }, result.hits.map(hitItem)),
          ],
  );
}
