// A session key's inbound side: the messages the gateway accepted (inputs) and the replies it
// queued and sent (delivery receipts). Work a crash cut off is highlighted: an interrupted input
// (its turn may have half-run) and a send of unknown outcome (the reply may or may not be out).

import { api, apiPath } from "./api.js";
import { formatTime, h, shortId, table } from "./dom.js";

const LIMIT = 100;

function inputState(input) {
  if (input.state === input.storedState) {
    return h("span", { class: `status status-${input.state}` }, input.state);
  }
  // Read as recover would record it: the lease lapsed and its owner process is gone.
  const title = `stored as ${input.storedState}: the lease lapsed and its owner process is gone`;
  return h("span", { class: `status status-${input.state}`, title }, `${input.state}*`);
}

function outcome(input) {
  const result = input.outcome;
  if (result === null) return "-";
  if (result.abandoned !== undefined) return `abandoned: ${result.abandoned}`;
  if (result.eventIds.length === 0) return "no events";
  return result.eventIds.map((id, i) => [i > 0 ? " " : "", shortId(id)]);
}

function inputsTable(inputs) {
  return table(
    [
      { title: "State", cell: inputState },
      { title: "Received", cell: (i) => formatTime(i.receivedAt) },
      { title: "Attempts", class: "num", cell: (i) => i.attempts },
      { title: "Owner", class: "hide-narrow", cell: (i) => i.lease?.owner ?? "-" },
      { title: "Outcome events", class: "wrap", cell: outcome },
      { title: "Input", class: "hide-narrow", cell: (i) => shortId(i.inputId) },
    ],
    inputs,
    {
      empty: "No inputs for this key.",
      rowAttrs: (i) => ({ class: i.state === "interrupted" ? "attention" : null }),
    },
  );
}

function deliveriesTable(deliveries) {
  return table(
    [
      { title: "Status", cell: (d) => h("span", { class: `status status-${d.status}` }, d.status) },
      { title: "Send started", cell: (d) => formatTime(d.sendStartedAt) },
      { title: "Settled", cell: (d) => formatTime(d.settledAt) },
      { title: "Platform message", class: "wrap", cell: (d) => d.platformMessageId ?? "-" },
      { title: "Queue", class: "hide-narrow", cell: (d) => d.queue },
      { title: "Delivery", class: "hide-narrow", cell: (d) => shortId(d.id) },
    ],
    deliveries,
    {
      empty: "No deliveries for this key.",
      rowAttrs: (d) => ({ class: d.status === "unknown" ? "attention" : null }),
    },
  );
}

/** Both panels of a session key, fetched together. */
export async function inboundPanels(agentId, key) {
  const base = apiPath("agents", agentId, "sessions", key);
  const [{ inputs }, { deliveries }] = await Promise.all([
    api(`${base}/inputs`, { limit: LIMIT }),
    api(`${base}/deliveries`, { limit: LIMIT }),
  ]);
  const note = (count, what) =>
    count >= LIMIT ? h("p", { class: "muted" }, `The first ${LIMIT} ${what} only.`) : null;
  return [
    h(
      "section",
      { class: "inbound", id: "inputs" },
      h("h2", {}, "Inputs (arrival order)"),
      inputsTable(inputs),
      inputs.some((i) => i.state !== i.storedState)
        ? h(
            "p",
            { class: "muted" },
            "* The lease lapsed and its owner process is gone: the gateway's recover has not recorded it yet.",
          )
        : null,
      note(inputs.length, "inputs"),
    ),
    h(
      "section",
      { class: "inbound", id: "deliveries" },
      h("h2", {}, "Deliveries (newest first)"),
      deliveriesTable(deliveries),
      note(deliveries.length, "deliveries"),
    ),
  ];
}
