// One session's conversation: a window of events loaded page by page (never the whole
// transcript), the tree beside it (branches, abandoned ranges, compactions, labels), and new
// events appended live as any process commits them.

import { api, apiPath, subscribe } from "./api.js";
import { renderEvent } from "./conversation.js";
import { formatTime, h, link, replace, route, shortId } from "./dom.js";
import { setLive } from "./live.js";
import { sessionUsagePanel } from "./session-usage.js";

const PAGE = 100;
/** Events loaded before a target seq, so the target does not sit at the very top. */
const LEAD = 10;

function jumpButton(seq, text = `#${seq}`) {
  return h("button", { type: "button", class: "linklike", "data-jump": seq }, text);
}

function treePanel(tree, snapshots) {
  const current = tree.leaves.find((leaf) => leaf.current);
  const sections = [
    h(
      "p",
      {},
      `${tree.nodes} events in the tree; the current branch has ${tree.currentBranchLength}`,
      current ? [", ending at ", jumpButton(current.seq)] : "",
      tree.roots > 1 ? ` · ${tree.roots} roots` : "",
      tree.danglingParents > 0 ? ` · ${tree.danglingParents} with a missing parent` : "",
    ),
  ];
  if (tree.branchPoints.length > 0) {
    sections.push(
      h("h3", {}, "Branches"),
      h(
        "ul",
        { class: "branch-points" },
        tree.branchPoints.map((point) =>
          h(
            "li",
            {},
            jumpButton(point.seq),
            " forks into ",
            point.children.map((child, i) => [
              i > 0 ? ", " : "",
              jumpButton(child.seq),
              child.current ? " (current)" : "",
            ]),
          ),
        ),
      ),
    );
  }
  if (tree.offBranch.length > 0) {
    sections.push(
      h("h3", {}, "Off the current branch"),
      h(
        "ul",
        {},
        tree.offBranch.map(([from, to]) =>
          h("li", {}, jumpButton(from), from === to ? "" : ["–", jumpButton(to)]),
        ),
      ),
    );
  }
  if (tree.summaries.length > 0) {
    sections.push(
      h("h3", {}, "Compactions and summaries"),
      h(
        "ul",
        { class: "summaries" },
        tree.summaries.map((s) =>
          h(
            "li",
            {},
            jumpButton(s.seq),
            ` ${s.type === "compaction" ? "compaction" : "branch summary"}`,
            s.tokensBefore === null
              ? ""
              : ` (${s.tokensBefore.toLocaleString("en-US")} tokens before)`,
            h("div", { class: "muted clip" }, s.summary.slice(0, 200)),
          ),
        ),
      ),
    );
  }
  if (tree.labels.length > 0) {
    sections.push(
      h("h3", {}, "Labels"),
      h(
        "ul",
        {},
        tree.labels.map((l) =>
          h(
            "li",
            {},
            jumpButton(l.seq),
            ` ${l.label ?? "(cleared)"} → `,
            shortId(l.targetId ?? "?"),
          ),
        ),
      ),
    );
  }
  if (snapshots.length > 0) {
    sections.push(
      h("h3", {}, "Snapshots"),
      h(
        "ul",
        {},
        snapshots.map((s) =>
          h("li", {}, `${s.reason} at ${s.eventCount} events, ${formatTime(s.createdAt)}`),
        ),
      ),
    );
  }
  if (tree.truncated) sections.push(h("p", { class: "muted" }, "Lists stop at 100 entries."));
  const narrow = window.matchMedia("(max-width: 800px)").matches;
  return h("details", { class: "tree-panel", open: !narrow }, h("summary", {}, "Tree"), sections);
}

const STRUCTURAL = new Set(["compaction", "branch_summary", "label", "session"]);

/**
 * Applies appended events that continue the current branch to the tree summary; false (and the
 * summary untouched) when one of them changes the tree's shape and the server must recompute it.
 */
function extendTree(tree, events) {
  // A leaf that has children already (after a move to an earlier event) would fork here.
  const current = tree.leaves.findIndex((l) => l.current);
  if (current === -1) return false;
  let leaf = tree.leafEventId;
  for (const { event } of events) {
    if (STRUCTURAL.has(event.type) || event.parentId !== leaf) return false;
    leaf = event.id;
  }
  const last = events.at(-1);
  if (last === undefined) return true;
  const depth = tree.leaves[current].depth + events.length;
  tree.leaves[current] = {
    id: last.event.id,
    seq: last.seq,
    type: last.event.type,
    depth,
    current: true,
  };
  tree.nodes += events.length;
  tree.currentBranchLength += events.length;
  tree.leafEventId = leaf;
  return true;
}

function sessionHeader(agentId, session, eventCount) {
  return h(
    "header",
    { class: "session-head" },
    h(
      "p",
      { class: "crumbs" },
      link([], "Agents"),
      " / ",
      link(["agents", agentId], agentId),
      " / conversation",
    ),
    h("h1", { class: "wrap" }, session.sessionId),
    h(
      "p",
      { class: "muted" },
      session.sessionKey
        ? ["key ", link(["agents", agentId, "keys", session.sessionKey], session.sessionKey)]
        : "no key",
      ` · started ${formatTime(session.createdAt)} UTC`,
      session.endedAt ? ` · ended ${formatTime(session.endedAt)} UTC` : "",
      session.resetReason ? ` · ${session.resetReason}` : "",
      session.predecessorId
        ? [
            " · continues ",
            h(
              "a",
              { href: route(["agents", agentId, "sessions", session.predecessorId]) },
              shortId(session.predecessorId),
            ),
          ]
        : "",
      " · ",
      eventCount,
    ),
  );
}

export async function conversationView({ root, params: [agentId, sessionId], query, isCurrent }) {
  const base = apiPath("agents", agentId, "transcripts", sessionId);
  const target = Number.parseInt(query.get("seq") ?? "", 10);
  let [{ session, snapshots }, tree, usage] = await Promise.all([
    api(base),
    api(`${base}/tree`),
    api(`${base}/usage`),
  ]);
  let loaded = [];
  let nextAfterSeq = null;
  const firstAfter = Number.isSafeInteger(target)
    ? Math.max(0, target - 1 - LEAD)
    : Math.max(0, session.eventCount - PAGE);
  const page = await api(`${base}/events`, { afterSeq: firstAfter, limit: PAGE });
  if (!isCurrent()) return;
  loaded = page.events;
  nextAfterSeq = page.nextAfterSeq;

  const list = h("div", { class: "events", role: "log", "aria-live": "polite" });
  const earlier = h("button", { type: "button", class: "more" }, "Load earlier");
  const later = h("button", { type: "button", class: "more" }, "Load later");
  const count = h("span", { class: "count" }, `${session.eventCount} events`);
  const aside = h("aside", {}, treePanel(tree, snapshots));
  const usagePart = h("div", {}, sessionUsagePanel(usage));
  const seqOfId = () => new Map(loaded.map((s) => [s.event.id, s.seq]));
  const offBranch = (seq) => tree.offBranch.some(([from, to]) => seq >= from && seq <= to);

  const renderAll = () => {
    const ids = seqOfId();
    let previousId;
    replace(
      list,
      loaded.map((stored) => {
        const node = renderEvent(stored, { previousId, seqOf: (id) => ids.get(id), offBranch });
        previousId = stored.event.id;
        return node;
      }),
    );
    earlier.hidden = (loaded[0]?.seq ?? 1) <= 1;
    later.hidden = nextAfterSeq === null;
  };
  const appendLive = (events) => {
    const ids = seqOfId();
    let previousId = loaded.at(-1)?.event.id;
    for (const stored of events) {
      if (stored.seq <= (loaded.at(-1)?.seq ?? 0)) continue;
      ids.set(stored.event.id, stored.seq);
      const node = renderEvent(stored, { previousId, seqOf: (id) => ids.get(id), offBranch });
      node.classList.add("new");
      list.append(node);
      loaded.push(stored);
      previousId = stored.event.id;
    }
  };
  const jump = async (seq) => {
    const node = list.querySelector(`#seq-${seq}`);
    if (node) {
      node.scrollIntoView({ block: "center" });
      node.classList.remove("flash");
      // Reading layout restarts the animation when the same event is jumped to twice.
      node.getBoundingClientRect();
      node.classList.add("flash");
    } else {
      location.hash = route(["agents", agentId, "sessions", sessionId], { seq });
    }
  };

  earlier.addEventListener("click", async () => {
    const first = loaded[0]?.seq ?? 1;
    const after = Math.max(0, first - 1 - PAGE);
    const older = await api(`${base}/events`, { afterSeq: after, limit: first - 1 - after });
    loaded = [...older.events, ...loaded];
    renderAll();
  });
  later.addEventListener("click", async () => {
    const newer = await api(`${base}/events`, { afterSeq: loaded.at(-1)?.seq ?? 0, limit: PAGE });
    loaded = [...loaded, ...newer.events];
    nextAfterSeq = newer.nextAfterSeq;
    renderAll();
  });
  const view = h(
    "div",
    {
      onclick: (event) => {
        const button = event.target.closest?.("[data-jump]");
        if (button) jump(Number(button.dataset.jump));
      },
    },
    sessionHeader(agentId, session, count),
    usagePart,
    h(
      "div",
      { class: "conversation" },
      h("div", { class: "main-column" }, earlier, list, later),
      aside,
    ),
  );
  replace(root, view);
  renderAll();
  if (Number.isSafeInteger(target)) jump(target);
  else list.lastElementChild?.scrollIntoView({ block: "end" });

  // Refetching the tree reads every identity row of the session, so it happens only when its
  // shape changed (a branch, a summary, a label, a moved leaf), at most once a second. An event
  // that just extends the current branch is applied here.
  let treeTimer = null;
  let usageTimer = null;
  // Summing the session's events costs tens of ms on a long one: at most once a second.
  const refreshUsage = () => {
    usageTimer ??= setTimeout(async () => {
      usageTimer = null;
      if (!isCurrent()) return;
      replace(usagePart, sessionUsagePanel(await api(`${base}/usage`)));
    }, 1000);
  };
  const refreshTree = () => {
    treeTimer ??= setTimeout(async () => {
      treeTimer = null;
      if (!isCurrent()) return;
      tree = await api(`${base}/tree`);
      replace(aside, treePanel(tree, snapshots));
      for (const node of list.children)
        node.classList.toggle("off-branch", offBranch(Number(node.dataset.seq)));
    }, 1000);
  };
  const stream = subscribe(
    `${base}/stream?afterSeq=${session.eventCount}`,
    {
      append: ({ events }) => {
        refreshUsage();
        if (extendTree(tree, events)) replace(aside, treePanel(tree, snapshots));
        else refreshTree();
        const atEnd = nextAfterSeq === null;
        const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 200;
        // Away from the end, the window stays put; "Load later" reaches the new events.
        if (atEnd) appendLive(events);
        if (atEnd && nearBottom) list.lastElementChild?.scrollIntoView({ block: "end" });
      },
      session: ({ session: next }) => {
        session = next;
        count.textContent = `${session.eventCount} events`;
        if (session.leafEventId !== tree.leafEventId) refreshTree();
      },
    },
    setLive,
  );
  return () => {
    stream.close();
    clearTimeout(treeTimer);
    clearTimeout(usageTimer);
  };
}
