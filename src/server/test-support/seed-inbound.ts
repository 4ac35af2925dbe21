import type { ProcessOwner } from "../../db/process-owner.js";
import { openStateHome } from "../../home.js";
import { InputStore } from "../../stores/agent/input-store.js";
import { DeliveryQueueStore } from "../../stores/global/delivery-queue-store.js";
import { MAIN_KEY, type SeededHome } from "./seed-home.js";

/** This pid with a start time it never had: judged dead, as a gateway killed mid-turn. */
const GHOST: ProcessOwner = { pid: process.pid, started: -1 };
const QUEUE = "outbound-delivery";
const MINUTE = 60_000;

export interface SeededInbound {
  /** Input ids by what became of them. */
  inputs: { answered: string; lost: string; cut: string; waiting: string };
  /** The transcript events `answered` was completed with. */
  answeredEventIds: string[];
  deliveries: { sent: string; cut: string; queued: string };
  platformMessageId: string;
}

function seedInputs(home: ReturnType<typeof openStateHome>, seeded: SeededHome) {
  const accept = (name: string) =>
    home.inputs.accept("main", MAIN_KEY, { idempotencyKey: name, payload: { text: name } }).input
      .inputId;
  const inputs = {
    answered: accept("answered"),
    lost: accept("lost"),
    cut: accept("cut"),
    waiting: accept("waiting"),
  };
  home.inputs.claim("main", MAIN_KEY, "gateway", { leaseMs: MINUTE });
  // Answered by the seeded conversation's turn: its events are recorded, none appended, so the
  // transcripts other tests count stay as they are.
  const done = home.inputs.complete("main", inputs.answered, "gateway", {
    sessionId: seeded.sessionId,
    eventIds: [seeded.ids.toolCall, seeded.ids.branchReply],
  });
  // A gateway that died a minute ago, its one-second leases long lapsed.
  const agent = home.agent("main");
  const ghost = new InputStore(agent.db, agent.transcripts, agent.branches, {
    process: GHOST,
    clock: () => Date.now() - MINUTE,
  });
  ghost.claim(MAIN_KEY, "gateway", { leaseMs: 1000 });
  home.inputs.recover("main", MAIN_KEY); // lost: recorded interrupted
  ghost.claim(MAIN_KEY, "gateway", { leaseMs: 1000 }); // cut: lapsed, not recorded yet
  return { inputs, answeredEventIds: done.outcome?.eventIds ?? [] };
}

function seedDeliveries(home: ReturnType<typeof openStateHome>) {
  const platformMessageId = "tg-1001";
  const enqueue = (id: string, queue: DeliveryQueueStore) =>
    queue.enqueue(QUEUE, { id, payload: { text: id }, sessionKey: MAIN_KEY, agentId: "main" });
  const past = new DeliveryQueueStore(home.db, { clock: () => Date.now() - MINUTE });
  enqueue("reply-sent", past);
  const sent = past.claim(QUEUE, "sender", { leaseMs: MINUTE });
  if (!sent) throw new Error("seedInbound: nothing to claim");
  past.beginSend(QUEUE, sent.id, sent.leaseId);
  past.settle(QUEUE, sent.id, sent.leaseId, { platformMessageId });
  enqueue("reply-cut", past);
  const cut = past.claim(QUEUE, "sender", { leaseMs: 1000 });
  if (!cut) throw new Error("seedInbound: nothing to claim");
  past.beginSend(QUEUE, cut.id, cut.leaseId); // then the sender died
  enqueue("reply-queued", home.queue);
  return {
    deliveries: { sent: "reply-sent", cut: "reply-cut", queued: "reply-queued" },
    platformMessageId,
  };
}

/**
 * On a home made by `seedHome`, MAIN_KEY's inbound story: an input answered, one interrupted and
 * recorded so, one cut off by a dead gateway that no recover has seen, one waiting; a reply sent
 * with a platform id, one cut off mid-send (unknown), one queued.
 */
export function seedInbound(seeded: SeededHome): SeededInbound {
  const home = openStateHome({ home: seeded.home, create: false });
  try {
    return { ...seedInputs(home, seeded), ...seedDeliveries(home) };
  } finally {
    home.close();
  }
}
