import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "../support/built.js";
import { FakePlatform } from "./fake-platform.js";
import { GatewayProcess } from "./gateway-process.js";
import { type GatewayRows, readGatewayRows } from "./gateway-rows.js";

// `npm run test:chaos` runs 50 trials; a failure prints its seed: replay it with
// AGENTSTATE_GATEWAY_CHAOS_SEED=<seed> (the kill times and messages repeat; thread timing does not).
const TRIALS = Number(process.env.AGENTSTATE_GATEWAY_CHAOS_TRIALS ?? 6);
const SEED = Number(process.env.AGENTSTATE_GATEWAY_CHAOS_SEED ?? Date.now() % 2_147_483_648);
const LEASE_MS = 600;
const MESSAGES_PER_TRIAL = 5;
const PEERS = ["ada", "bob", "cy"];

function generator(start: number): () => number {
  let seed = start;
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Message {
  messageId: string;
  peer: string;
  text: string;
  /** Delivered three times at once: the channel's redeliveries. */
  retried: boolean;
}

/** The channel: what it sent and which input ids the gateway's 202s named for each message. */
class Channel {
  readonly messages: Message[] = [];
  readonly acked = new Map<string, string[]>();

  constructor(private readonly random: () => number) {}

  newMessages(count: number): Message[] {
    return Array.from({ length: count }, () => {
      const i = this.messages.length;
      const message = {
        messageId: `m${i}`,
        peer: PEERS[i % PEERS.length] as string,
        text: `hello ${i}`,
        retried: this.random() < 0.3,
      };
      this.messages.push(message);
      return message;
    });
  }

  unacked(): Message[] {
    return this.messages.filter((m) => !this.acked.has(m.messageId));
  }

  /** Sends each message, paced, with its redeliveries; a dead gateway just leaves it unacked. */
  async deliver(port: number, messages: Message[]): Promise<void> {
    for (const message of messages) {
      const copies = message.retried ? 3 : 1;
      await Promise.all(Array.from({ length: copies }, () => this.post(port, message)));
      await sleep(this.random() * 40);
    }
  }

  private async post(port: number, message: Message): Promise<void> {
    const { retried: _, ...body } = message;
    try {
      const response = await fetch(`http://127.0.0.1:${port}/inbound`, {
        method: "POST",
        body: JSON.stringify(body),
      });
      if (response.status !== 202) return;
      const { inputId } = (await response.json()) as { inputId: string };
      this.acked.set(message.messageId, [...(this.acked.get(message.messageId) ?? []), inputId]);
    } catch {
      // Killed mid-request: no 202, so the channel will deliver it again.
    }
  }
}

/**
 * Until every message got a 202, a reply reached the platform for each, and the gateway recorded
 * every reply as sent (a send a killed gateway began reaches the platform before its receipt is
 * settled: the next gateway settles it once its lease lapses); false on timeout.
 */
async function drain(
  channel: Channel,
  platform: FakePlatform,
  port: number,
  home: string,
): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    await channel.deliver(port, channel.unacked());
    const answered = new Set(platform.sends.map((send) => send.inReplyTo));
    const delivered = channel.messages.every(
      (m) => channel.acked.has(m.messageId) && answered.has(m.messageId),
    );
    if (delivered && readGatewayRows(home).deliveries.every((d) => d.status === "sent"))
      return true;
    await sleep(100);
  }
  return false;
}

function checkNothingLost(channel: Channel, rows: GatewayRows): void {
  const byKey = new Map(rows.inputs.map((input) => [input.idempotency_key, input]));
  for (const [messageId, inputIds] of channel.acked) {
    const input = byKey.get(messageId);
    expect(input, `message ${messageId} got a 202 but has no input`).toBeDefined();
    // Every 202 for a message, redeliveries included, named the same input.
    expect(new Set(inputIds), messageId).toEqual(new Set([input?.input_id]));
  }
  expect(rows.inputs).toHaveLength(channel.messages.length);
}

function checkTurns(channel: Channel, rows: GatewayRows): void {
  const eventIds = new Set(rows.events.map((e) => `${e.session_id}/${e.event_id}`));
  for (const input of rows.inputs) {
    expect(["completed", "interrupted"], input.input_id).toContain(input.state);
    if (input.state !== "completed") continue;
    const { sessionId, eventIds: ids = [] } = input.outcome ?? {};
    expect(ids, `outcome of ${input.input_id}`).toHaveLength(4);
    for (const id of ids) expect(eventIds.has(`${sessionId}/${id}`), id).toBe(true);
  }
  // Each message was taken in, and answered, by exactly one turn in the transcripts.
  const count = (role: string, text: string) =>
    rows.events.filter((e) => e.role === role && e.text === text).length;
  for (const { messageId, text } of channel.messages) {
    expect(count("user", text), messageId).toBe(1);
    expect(count("assistant", `echo: ${text}`), messageId).toBe(1);
  }
}

function checkDeliveries(platform: FakePlatform, rows: GatewayRows): number {
  const byId = new Map(rows.deliveries.map((d) => [d.id, d]));
  for (const input of rows.inputs) {
    const [deliveryId] = input.outcome?.deliveryIds ?? [];
    const delivery = byId.get(deliveryId as string);
    expect(delivery?.idempotency_key, input.input_id).toBe(`reply:${input.input_id}`);
    expect(delivery?.status, input.input_id).toBe("sent");
  }
  let twice = 0;
  for (const delivery of rows.deliveries) {
    const sends = platform.sends.filter((send) => send.deliveryId === delivery.id);
    expect(sends.length, `delivery ${delivery.id}`).toBeGreaterThan(0);
    // The receipt names a message the platform really has.
    expect(sends.map((s) => s.messageId)).toContain(delivery.platform_message_id);
    // A further copy is only acceptable after a send whose outcome was unknown, resent on purpose.
    const resends = (rows.unknownDecisions.get(delivery.id) ?? []).filter((d) => d === "resend");
    expect(sends.length, `delivery ${delivery.id} sent twice`).toBeLessThanOrEqual(
      1 + resends.length,
    );
    if (sends.length > 1) twice++;
  }
  // One reply entry per message: a re-run turn never queued a second one.
  const perMessage = new Map<string, Set<string>>();
  for (const send of platform.sends) {
    perMessage.set(
      send.inReplyTo,
      (perMessage.get(send.inReplyTo) ?? new Set()).add(send.deliveryId),
    );
  }
  for (const [messageId, ids] of perMessage) expect(ids.size, messageId).toBe(1);
  return twice;
}

describe("the gateway example under kill -9", () => {
  let dir: string;
  beforeAll(() => {
    requireBuild();
    dir = mkdtempSync(join(tmpdir(), "agentstate-gateway-chaos-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    `loses no accepted message and answers each once across ${TRIALS} kills (seed ${SEED})`,
    async () => {
      console.log(`gateway chaos: seed ${SEED}, ${TRIALS} trials`);
      const random = generator(SEED);
      const platform = new FakePlatform({
        random: generator(SEED + 1),
        maxDelayMs: 80,
        refuseShare: 0.1,
      });
      const platformUrl = await platform.start();
      const home = join(dir, "home");
      const channel = new Channel(random);
      const lines: Record<string, unknown>[] = [];
      try {
        for (let trial = 0; trial < TRIALS; trial++) {
          const gateway = new GatewayProcess(home, platformUrl, LEASE_MS);
          const fresh = channel.newMessages(MESSAGES_PER_TRIAL);
          // One kill in five lands early, often during the start-up recovery.
          const early = random() < 0.2;
          const delay = early ? random() * 300 : random() * 500;
          if (early) await sleep(delay);
          else {
            const port = await gateway.port;
            if (port !== undefined) {
              const delivering = channel.deliver(port, [...channel.unacked(), ...fresh]);
              await sleep(delay);
              await gateway.kill();
              await delivering;
            }
          }
          await gateway.kill();
          lines.push(...gateway.lines);
        }
        const gateway = new GatewayProcess(home, platformUrl, LEASE_MS);
        const port = await gateway.port;
        expect(port, "the gateway starts after the last kill").toBeDefined();
        const answered = await drain(channel, platform, port as number, home);
        await gateway.stop();
        lines.push(...gateway.lines);
        expect(answered, "every message answered within 30 s").toBe(true);

        const rows = readGatewayRows(home);
        checkNothingLost(channel, rows);
        checkTurns(channel, rows);
        const twice = checkDeliveries(platform, rows);
        const events = (name: string) => lines.filter((line) => line.event === name);
        expect(events("sweep-failed"), "recovery never failed").toEqual([]);
        console.log(
          `gateway chaos: ${channel.messages.length} messages, ${platform.sends.length} sends,` +
            ` ${events("requeued").length} inputs requeued,` +
            ` ${events("unknown-resolved").length} unknown sends resolved` +
            ` (${events("unknown-resolved").filter((l) => l.sent).length} found sent),` +
            ` ${twice} replies sent twice`,
        );
      } finally {
        await platform.stop();
      }
    },
    120_000 + TRIALS * 5_000,
  );
});
