// The dashboard: a hash router over a few views. Each view renders into <main> and returns a
// cleanup (closing its live streams) that runs when the route changes.

import { h, replace } from "./dom.js";
import { setLive } from "./live.js";
import { conversationView } from "./view-conversation.js";
import { searchView } from "./view-search.js";
import { keyView, memoryView, sessionsView, transcriptsView } from "./views-agent.js";
import { agentsView, historyView, migrationView } from "./views-home.js";

const ROUTES = [
  [/^$/, agentsView],
  [/^agents\/([^/]+)$/, sessionsView],
  [/^agents\/([^/]+)\/transcripts$/, transcriptsView],
  [/^agents\/([^/]+)\/memory$/, memoryView],
  [/^agents\/([^/]+)\/keys\/([^/]+)$/, keyView],
  [/^agents\/([^/]+)\/sessions\/([^/]+)$/, conversationView],
  [/^search$/, searchView],
  [/^history$/, historyView],
  [/^history\/migrations\/([^/]+)$/, migrationView],
];

const main = document.getElementById("main");
let cleanup = () => {};
let generation = 0;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, search = ""] = raw.split("?", 2);
  return { path, query: new URLSearchParams(search) };
}

function failure(error) {
  const code = error?.code ? `${error.code}: ` : "";
  return h("div", { class: "error", role: "alert" }, `${code}${error?.message ?? String(error)}`);
}

async function render() {
  cleanup();
  cleanup = () => {};
  setLive("");
  const mine = ++generation;
  const { path, query } = parseHash();
  for (const link of document.querySelectorAll("nav a")) {
    const target = link.getAttribute("href").replace(/^#\/?/, "");
    const current =
      target === "" ? path === "" || path.startsWith("agents") : path.startsWith(target);
    link.classList.toggle("current", current);
  }
  const match = ROUTES.map(([pattern, view]) => [pattern.exec(path), view]).find(([m]) => m);
  if (!match) {
    replace(main, failure({ message: "no such page" }));
    return;
  }
  const [found, view] = match;
  let params;
  try {
    params = found.slice(1).map(decodeURIComponent);
  } catch {
    replace(main, failure({ message: "malformed address" }));
    return;
  }
  replace(main, h("p", { class: "loading" }, "Loading…"));
  try {
    const result = await view({ root: main, params, query, isCurrent: () => mine === generation });
    if (mine === generation && typeof result === "function") cleanup = result;
    else if (typeof result === "function") result();
  } catch (error) {
    if (mine === generation) replace(main, failure(error));
  }
}

document.getElementById("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const q = new FormData(event.target).get("q")?.toString().trim() ?? "";
  if (q !== "") location.hash = `#/search?${new URLSearchParams({ q })}`;
});

window.addEventListener("hashchange", render);
render();
