// A complete gateway loop on agentstate that survives `kill -9` at any moment: no accepted message
// is lost, none is answered twice, and no reply is sent twice while the platform answers the
// "did you get delivery X?" check truthfully.
//
//   channel --POST /inbound--> accept --> turn loop --> reply queue --> sender --POST /send--> platform
//
// Run after `npm run build`:
//   node examples/gateway-loop.mjs <home> <platform-url> [port]
// The platform URL may also come from GATEWAY_PLATFORM_URL. The platform is anything that answers
// `POST /send` with `{ messageId }` and `GET /sent?deliveryId=…` with `{ sent, messageId? }`
// (test/chaos/fake-platform.ts is one). The gateway prints `{"listening":<port>}` once ready;
// then try `curl -d '{"messageId":"m1","peer":"ada","text":"hi"}' localhost:<port>/inbound`.
// GATEWAY_LEASE_MS (default 5000) is how long a crashed run's claims block its work.
import { createServer } from "node:http";
import { openStateHome } from "agentstate";

const [homeDir, platformArg, portArg = "0"] = process.argv.slice(2);
const PLATFORM = platformArg ?? process.env.GATEWAY_PLATFORM_URL;
if (!homeDir || !PLATFORM) {
  console.error("usage: node examples/gateway-loop.mjs <home> <platform-url> [port]");
  process.exit(2);
}
const AGENT = "main";
const CHANNEL = "fake";
const QUEUE = "outbound-delivery";
const OWNER = "gateway-loop";
const LEASE_MS = Number(process.env.GATEWAY_LEASE_MS ?? 5000);
// How long the scripted "model" thinks per turn: a kill is more likely to land mid-turn.
const TURN_MS = Number(process.env.GATEWAY_TURN_MS ?? 100);
// A claim of a killed run only lapses after LEASE_MS, so recovery runs again and again, not only
// at start-up: a restarted gateway picks up its predecessor's work as soon as it may.
const SWEEP_EVERY_MS = Math.max(50, Math.floor(LEASE_MS / 2));

const home = openStateHome({ home: homeDir });
let running = true;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (fields) => process.stdout.write(`${JSON.stringify(fields)}\n`);

// ---- 1. Inbound: answer 202 only once the input is committed ----------------------------------

function accept({ messageId, peer, text }) {
  const conversation = home.conversations.resolve({ channel: CHANNEL, peerId: peer });
  const sessionKey = `agent:${AGENT}:${CHANNEL}:${peer}`;
  // The channel's message id is the idempotency key: a redelivery gets the first input back
  // (with its outcome once answered), never a second turn.
  return home.inputs.accept(AGENT, sessionKey, {
    idempotencyKey: messageId,
    payload: { messageId, peer, text },
    channel: CHANNEL,
    conversationId: conversation.conversationId,
  });
}

async function handleInbound(request, response) {
  let body = "";
  for await (const chunk of request) body += chunk;
  const message = JSON.parse(body);
  if (![message.messageId, message.peer, message.text].every((v) => typeof v === "string")) {
    response.writeHead(400).end("messageId, peer and text are required strings\n");
    return;
  }
  const { input, duplicate } = accept(message);
  // accept() has committed: from here on a crash loses nothing, so the channel may forget it.
  response.writeHead(202, { "content-type": "application/json" });
  response.end(JSON.stringify({ inputId: input.inputId, duplicate, state: input.state }));
}

const server = createServer((request, response) => {
  if (request.method !== "POST" || request.url !== "/inbound") {
    response.writeHead(404).end();
    return;
  }
  handleInbound(request, response).catch((error) => {
    response.writeHead(500).end(`${error.message}\n`);
  });
});

// ---- 2. Turns: a scripted backend, reply queued before the input completes ---------------------

/** The agent's turn, deterministic: a fake tool call, its result, and an echo of the text. */
async function scriptedTurn(input) {
  await sleep(TURN_MS);
  const { text } = input.payload;
  const callId = `call-${input.inputId}`;
  const message = (role, content, extra = {}) => ({
    type: "message",
    message: { role, content, timestamp: Date.now(), ...extra },
  });
  return [
    message("user", [{ type: "text", text }], { idempotencyKey: `input:${input.inputId}` }),
    message("assistant", [{ type: "toolCall", id: callId, name: "count", arguments: { text } }]),
    message("toolResult", [{ type: "text", text: String(text.length) }], {
      toolCallId: callId,
      toolName: "count",
    }),
    message("assistant", [{ type: "text", text: `echo: ${text}` }]),
  ];
}

async function runTurn(input) {
  const { sessionId } = home.sessions.ensure(AGENT, input.sessionKey);
  const events = await scriptedTurn(input);
  // Queued BEFORE the input completes, under a key derived from the input: a turn re-run after a
  // crash gets this same entry back (even if it was sent already) instead of a second reply.
  const delivery = home.queue.enqueue(QUEUE, {
    idempotencyKey: `reply:${input.inputId}`,
    payload: { peer: input.payload.peer, inReplyTo: input.payload.messageId, text: replyOf(events) },
    agentId: AGENT,
    sessionKey: input.sessionKey,
    conversationId: input.conversationId,
    channel: CHANNEL,
  });
  // One transaction: the input is completed together with its transcript rows, or not at all.
  home.inputs.complete(AGENT, input.inputId, OWNER, {
    sessionId,
    events,
    deliveryIds: [delivery.id],
  });
}

function replyOf(events) {
  return events.at(-1).message.content[0].text;
}

/** The session keys that have inputs in `state` (one claimer per key keeps turns in order). */
function sessionKeysIn(state) {
  if (!home.hasAgent(AGENT)) return [];
  return [...new Set(home.inputs.list(AGENT, { state, limit: 1000 }).map((i) => i.sessionKey))];
}

async function turnLoop() {
  while (running) {
    let ran = 0;
    for (const key of sessionKeysIn("accepted")) {
      for (const input of home.inputs.claim(AGENT, key, OWNER, { leaseMs: LEASE_MS })) {
        await runTurn(input);
        ran++;
      }
    }
    await sleep(ran > 0 ? 0 : 20);
  }
}

// ---- 3. Sender: beginSend is committed before the platform hears of the reply ------------------

// Sends this process has begun and not finished: their outcome is about to be known here, so the
// sweep leaves them alone even when a slow platform lets their lease lapse.
const inFlight = new Set();

async function send(entry) {
  home.queue.beginSend(QUEUE, entry.id, entry.leaseId);
  inFlight.add(entry.id);
  try {
    await deliver(entry);
  } finally {
    inFlight.delete(entry.id);
  }
}

async function deliver(entry) {
  let response;
  try {
    response = await fetch(`${PLATFORM}/send`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        deliveryId: entry.id,
        idempotencyKey: entry.idempotencyKey,
        ...entry.payload,
      }),
    });
  } catch (error) {
    // No answer: the platform may or may not have the message. Neither settle nor fail; once the
    // lease lapses the entry is `unknown` and the sweep asks the platform.
    log({ event: "send-unanswered", deliveryId: entry.id, error: error.message });
    return;
  }
  if (response.ok) {
    const { messageId } = await response.json();
    home.queue.settle(QUEUE, entry.id, entry.leaseId, { platformMessageId: messageId });
  } else {
    // The platform said no: nothing was sent, so an ordinary retry with backoff is safe.
    home.queue.fail(QUEUE, entry.id, entry.leaseId, `platform answered ${response.status}`);
  }
}

async function sendLoop() {
  while (running) {
    const entry = home.queue.claim(QUEUE, OWNER, { leaseMs: LEASE_MS });
    if (entry) await send(entry);
    else await sleep(20);
  }
}

// ---- 4. Recovery: interrupted turns and sends of unknown outcome -------------------------------

function recoverInputs() {
  if (!home.hasAgent(AGENT)) return;
  for (const { interrupted, danglingToolCalls } of home.inputs.recoverAll(AGENT)) {
    for (const input of interrupted) {
      // The scripted backend is safe to run twice: its only tool reads. A real gateway decides
      // per input, looking at `danglingToolCalls`: requeue when the turn may run again, abandon
      // (and tell the user) when a tool may already have acted.
      home.inputs.requeue(AGENT, input.inputId);
      log({ event: "requeued", inputId: input.inputId, danglingToolCalls: danglingToolCalls.length });
    }
  }
}

/**
 * The "check by message id" policy: for each send of unknown outcome, ask the platform whether it
 * has a message for that delivery id. Found: record it as sent, with the platform's id. Not found:
 * send it again. The decision is recorded in `kv` first, so an operator can see why a reply went
 * out twice if the platform's answer was ever wrong.
 */
async function resolveUnknownSends() {
  // An `onUnknown` policy is synchronous and cannot ask the platform over the network; with the
  // home's default (`keep`) this only records lapsed sends as unknown, and the check runs here.
  home.queue.reconcileUnknown(QUEUE);
  for (const entry of home.queue.listUnknown(QUEUE)) {
    if (inFlight.has(entry.id)) continue;
    const url = `${PLATFORM}/sent?deliveryId=${encodeURIComponent(entry.id)}`;
    const found = await (await fetch(url)).json();
    const decision = found.sent ? { sent: true, platformMessageId: found.messageId } : "resend";
    const attempt = `unknown:${entry.id}@${entry.sendStartedAt}`; // one record per send begun
    home.kv.set("gateway-loop", attempt, { decision, at: Date.now() });
    home.queue.resolveUnknown(QUEUE, entry.id, decision);
    log({ event: "unknown-resolved", deliveryId: entry.id, sent: Boolean(found.sent) });
  }
}

async function sweep() {
  recoverInputs();
  await resolveUnknownSends();
}

async function sweepLoop() {
  while (running) {
    await sleep(SWEEP_EVERY_MS);
    await sweep().catch((error) => log({ event: "sweep-failed", error: error.message }));
  }
}

// ---- Start and stop ----------------------------------------------------------------------------

await sweep();
server.listen(Number(portArg), "127.0.0.1", () => {
  log({ listening: server.address().port });
});
const loops = Promise.all([turnLoop(), sendLoop(), sweepLoop()]);

async function stop() {
  running = false;
  server.close();
  server.closeAllConnections();
  await loops;
  home.close();
}
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
