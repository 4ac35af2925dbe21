import type { Command } from "commander";
import type { ControlPlaneQueue } from "../../control-plane/control-plane.js";
import { StateError } from "../../db/errors.js";
import { checkEnum } from "../../memory/taxonomy.js";
import {
  DELIVERY_STATUSES,
  type DeliveryEntry,
  type DeliveryStatus,
} from "../../stores/global/delivery-queue-rows.js";
import { addHomeOption, addJsonOption, type JsonOption, parseInteger } from "../common.js";
import {
  addControlPlaneOption,
  type ControlPlaneOption,
  withControlPlane,
} from "../control-plane-option.js";
import { largerLimit, moreLine, pageOf, printJson, renderTable } from "../output.js";
import { sanitize } from "../render/style.js";

interface DeliveriesOptions extends ControlPlaneOption, JsonOption {
  queue?: string;
  sessionKey?: string;
  conversation?: string;
  agent?: string;
  state?: string;
  limit: string;
  full?: boolean;
}

const MAX_DELIVERIES = 10_000;

function time(ms: number | null): string {
  return ms === null ? "-" : new Date(ms).toISOString();
}

function render(entries: readonly DeliveryEntry[], full: boolean): string {
  return renderTable(
    entries,
    [
      { header: "QUEUE", value: (e) => sanitize(e.queue) },
      { header: "ID", value: (e) => sanitize(e.id), max: 36 },
      { header: "STATUS", value: (e) => e.status },
      { header: "SESSION KEY", value: (e) => sanitize(e.sessionKey ?? "-"), max: 40 },
      { header: "ENQUEUED", value: (e) => time(e.enqueuedAt) },
      { header: "SEND STARTED", value: (e) => time(e.sendStartedAt) },
      { header: "SETTLED", value: (e) => time(e.settledAt) },
      { header: "PLATFORM ID", value: (e) => sanitize(e.platformMessageId ?? "-"), max: 24 },
      { header: "ERROR", value: (e) => sanitize(e.lastError ?? "-"), max: 40 },
    ],
    { full },
  );
}

const NEEDS_FILTER =
  "deliveries needs --session-key, --conversation or --agent; or --state unknown (every queue, or --queue Q); or --queue Q --state failed";

/** The queue query the flags name: receipts by owner, else a queue's unknown or failed sends. */
function listDeliveries(
  q: ControlPlaneQueue,
  options: DeliveriesOptions,
  state: DeliveryStatus | undefined,
  limit: number,
): Promise<DeliveryEntry[]> {
  const { queue, sessionKey, conversation, agent } = options;
  if (sessionKey !== undefined || conversation !== undefined || agent !== undefined) {
    const query = { sessionKey, conversationId: conversation, agentId: agent, queue, limit };
    return q.receipts(state === undefined ? query : { ...query, status: state });
  }
  if (state === "unknown") {
    return queue === undefined
      ? q.listUnknownEverywhere({ limit })
      : q.listUnknown(queue, { limit });
  }
  if (state === "failed" && queue !== undefined) return q.listFailed(queue, { limit });
  throw new StateError("E_INVALID_ARGUMENT", NEEDS_FILTER);
}

const HELP = `
Receipts of a session key, a conversation or an agent are listed newest first, across queues
unless --queue is given. A send begun whose lease lapsed before it settled reads as unknown (maybe
sent) before the gateway's reconcile records it; this command only reads and records nothing.

Examples:
  agentstate deliveries --session-key agent:main:main
  agentstate deliveries --state unknown
  agentstate deliveries --queue outbound-delivery --state failed --json
  agentstate deliveries --state unknown --control-plane postgres://db.internal/agentstate

When more deliveries follow, the last line is \`more: --limit <n>\`.`;

export function registerDeliveries(program: Command): void {
  const command = program
    .command("deliveries")
    .description("list queued and sent replies (delivery receipts), sends of unknown outcome")
    .option("--queue <name>", "only this queue (e.g. outbound-delivery, session-delivery)")
    .option("--session-key <key>", "the deliveries of this session key")
    .option("--conversation <id>", "the deliveries to this conversation id")
    .option("--agent <id>", "the deliveries of this agent")
    .option("--state <status>", `only this status: ${DELIVERY_STATUSES.join(", ")}`)
    .option("--limit <n>", `at most this many deliveries (1 to ${MAX_DELIVERIES})`, "100")
    .option("--full", "show ids, keys and errors whole instead of cut with …")
    .addHelpText("after", HELP);
  addHomeOption(command);
  addJsonOption(command);
  addControlPlaneOption(command);
  command.action(async (options: DeliveriesOptions) => {
    const state =
      options.state === undefined
        ? undefined
        : checkEnum("--state", options.state, DELIVERY_STATUSES);
    const limit = parseInteger("--limit", options.limit, 1, MAX_DELIVERIES);
    // One more than asked for, to tell whether more follow.
    const { rows, more } = await withControlPlane(options, async (cp) =>
      pageOf(
        await listDeliveries(cp.queue, options, state, Math.min(limit + 1, MAX_DELIVERIES)),
        limit,
      ),
    );
    if (options.json) {
      printJson(rows);
      return;
    }
    const text = rows.length === 0 ? "no deliveries" : render(rows, options.full === true);
    process.stdout.write(`${text}\n`);
    const flags = more ? largerLimit(limit, MAX_DELIVERIES) : null;
    if (flags !== null) process.stdout.write(moreLine(flags));
  });
}
