// Inbound inputs: what accepting, claiming and completing a message adds to a turn. A turn is the
// user message and the assistant reply appended to a session (two events, as a gateway without
// inputs writes them). The turn with inputs, as a gateway that runs the turn at once writes it, is
// `accept` with `claim` and the user message as `events` (one transaction), then `complete` with
// the reply appended in the completing transaction. The same turn by separate calls is `accept`
// (its own transaction, when the message arrives), `claim`, the user message append, `complete`.
// All run on one agent database already holding completed inputs.
import { statSync } from "node:fs";
import { join } from "node:path";
import { openStateHome } from "../dist/index.js";
import { INPUT_SQL } from "../dist/stores/agent/input-sql.js";
import {
  compare,
  fmtCount,
  fmtUs,
  met,
  openBareDb,
  progress,
  QUICK,
  runIfMain,
  sampleWal,
  stats,
  table,
  walPhase,
  walTargets,
  watchWal,
  withTempDir,
} from "./lib.mjs";

const AGENT = "bench";
/** Completed inputs (and their turns' events) in the database before the run, over SEED_KEYS keys. */
const SEEDED = QUICK ? 2_000 : 50_000;
const SEED_KEYS = 100;
const CASE = QUICK
  ? { warmup: 100, iterations: 500, rounds: 2 }
  : { warmup: 500, iterations: 2_000, rounds: 5 };
/** Turns per WAL count: 2 events each, so the search index's bulk writes (every 64) fall in whole. */
const WAL_TURNS = QUICK ? 256 : 1_024;
const LEASE_MS = 60_000;
const TARGET_PAGES = 3;
const TARGET_P50_US = 300;

/** A channel message as a gateway would accept it (~300 bytes of JSON). */
function payload(n) {
  return {
    channel: "telegram",
    from: "user-1234567890",
    chatId: "chat-1234567890",
    messageId: `m${n}`,
    text: "Could you summarize the three papers on retrieval-augmented generation I sent yesterday, with a one-line takeaway for each?",
  };
}

function userEvent(n) {
  return {
    type: "message",
    message: { role: "user", content: [{ type: "text", text: payload(n).text }], timestamp: n },
  };
}

/**
 * The user message with the transcript idempotency key the other turns append it under. A turn
 * that accepts the message with it as `events` needs none: the input's key keeps a redelivery from
 * appending it again, in the same transaction. The bench counts that turn with the key too.
 */
function keyedUserEvent(n) {
  const event = userEvent(n);
  return { ...event, message: { ...event.message, idempotencyKey: `u${n}` } };
}

const REPLY = {
  type: "message",
  message: {
    role: "assistant",
    content: [
      {
        type: "text",
        text: "Here is the summary you asked for: three papers, each with a one-line takeaway and a link. The second one is the most relevant to your question about long contexts.",
      },
    ],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    stopReason: "stop",
    timestamp: 0,
  },
};

/** One turn as each kind of gateway writes it; `steps` (optional) receives each step's end. */
function turns(home) {
  let n = 0;
  const plain = (sessionKey, sessionId) => () => {
    const i = n++;
    const scope = { agentId: AGENT, sessionId };
    home.transcripts.append(scope, userEvent(i), { idempotencyKey: `u${i}`, sessionKey });
    home.transcripts.append(scope, REPLY, { sessionKey });
  };
  const withInputs =
    (sessionKey, sessionId) =>
    (steps = () => {}) => {
      const i = n++;
      const scope = { agentId: AGENT, sessionId };
      home.inputs.accept(AGENT, sessionKey, { idempotencyKey: `m${i}`, payload: payload(i) });
      steps("accept");
      const [input] = home.inputs.claim(AGENT, sessionKey, "turn", { leaseMs: LEASE_MS });
      steps("claim");
      home.transcripts.append(scope, userEvent(i), { idempotencyKey: `u${i}`, sessionKey });
      steps("user append");
      home.inputs.complete(AGENT, input.inputId, "turn", { sessionId, events: [REPLY] });
      steps("complete + reply");
    };
  const oneStep =
    (sessionKey, sessionId, { keyed = false } = {}) =>
    (steps = () => {}) => {
      const i = n++;
      const { input } = home.inputs.accept(
        AGENT,
        sessionKey,
        { idempotencyKey: `m${i}`, payload: payload(i) },
        {
          claim: { owner: "turn", leaseMs: LEASE_MS },
          sessionId,
          events: [keyed ? keyedUserEvent(i) : userEvent(i)],
        },
      );
      steps("accept + claim + user append");
      home.inputs.complete(AGENT, input.inputId, "turn", { sessionId, events: [REPLY] });
      steps("complete + reply");
    };
  return { plain, withInputs, oneStep };
}

/** Completed inputs over SEED_KEYS session keys, each with its turn's two events. */
function seed(home) {
  const { oneStep } = turns(home);
  const agent = home.agent(AGENT);
  const writers = Array.from({ length: SEED_KEYS }, (_, k) =>
    oneStep(`agent:${AGENT}:seed-${k}`, `seed-${k}`),
  );
  for (let done = 0; done < SEEDED; done += 1_000) {
    agent.db.tx(() => {
      for (let i = done; i < Math.min(SEEDED, done + 1_000); i++) writers[i % SEED_KEYS]();
    });
    sampleWal();
  }
  agent.transcripts.index.indexPending();
}

/**
 * The floor: the store's own statements for a turn (insert claimed, complete) through bare SQLite
 * on a database of the same schema files, autocommit each (as the store runs them when no events
 * come with them), JSON pre-encoded, no transcript append.
 */
function floorInputs(db) {
  const insert = db.prepare(INPUT_SQL.insert);
  const complete = db.prepare(INPUT_SQL.complete);
  const body = JSON.stringify(payload(0));
  const outcome = JSON.stringify({ sessionId: "s", eventIds: ["e"], deliveryIds: [] });
  const holder = { owner: "turn", pid: process.pid, started: 1 };
  let n = 0;
  return () => {
    const now = Date.now();
    const row = insert.get({
      ...holder,
      inputId: null,
      tag: "0123456789ab",
      sessionKey: "agent:bench:floor",
      idempotencyKey: `f${n++}`,
      payload: body,
      channel: null,
      conversationId: null,
      receivedAt: now,
      now,
      until: now + LEASE_MS,
    });
    complete.get({ ...holder, inputId: row.input_id, seq: row.arrival_seq, now, outcome });
  };
}

/** Step timings of one kind of turn: `record(name)` ends the current step. */
function stepTimer(names) {
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  let t0 = 0n;
  return {
    samples,
    start: () => {
      t0 = process.hrtime.bigint();
    },
    record: (name) => {
      const t = process.hrtime.bigint();
      samples[name].push(Number(t - t0));
      t0 = t;
    },
  };
}

const SEPARATE_STEPS = ["accept", "claim", "user append", "complete + reply"];
const ONE_STEP_STEPS = ["accept + claim + user append", "complete + reply"];

/** Timing: plain turns, both kinds of turns with inputs (each step timed too) and the floor. */
function timeTurns(home, floorDb) {
  const { plain, withInputs, oneStep } = turns(home);
  const plainTurn = plain("agent:bench:plain", "plain");
  const separateTurn = withInputs("agent:bench:inputs", "inputs");
  const oneStepTurn = oneStep("agent:bench:one-step", "one-step");
  const separate = stepTimer(SEPARATE_STEPS);
  const together = stepTimer(ONE_STEP_STEPS);
  const result = compare(
    {
      plain: { ...CASE, fn: plainTurn },
      inputs: {
        ...CASE,
        fn: () => {
          together.start();
          oneStepTurn(together.record);
        },
      },
      separate: {
        ...CASE,
        fn: () => {
          separate.start();
          separateTurn(separate.record);
        },
      },
      floor: { ...CASE, fn: floorInputs(floorDb) },
    },
    { rounds: CASE.rounds },
  );
  const warm = CASE.warmup;
  const statsOf = (samples) =>
    Object.fromEntries(
      Object.entries(samples).map(([name, list]) => [name, stats(list.slice(warm))]),
    );
  return { ...result, steps: statsOf(together.samples), separateSteps: statsOf(separate.samples) };
}

/** WAL pages per turn (and per step of each turn with inputs), auto-checkpoint off while counting. */
function walPages(home) {
  const agent = home.agent(AGENT);
  const pageSize = agent.db.prepare("PRAGMA page_size").get().page_size;
  const walPath = `${agent.db.path}-wal`;
  const pagesNow = () => (statSync(walPath).size - 32) / (pageSize + 24);
  const { plain, withInputs, oneStep } = turns(home);
  agent.db.exec("PRAGMA wal_autocheckpoint = 0");
  const count = (fn) => {
    agent.db.checkpoint("TRUNCATE");
    for (let i = 0; i < WAL_TURNS; i++) fn();
    return Math.max(0, pagesNow()) / WAL_TURNS;
  };
  const bySteps = (turn, names) => {
    const perStep = Object.fromEntries(names.map((name) => [name, 0]));
    let before = 0;
    const pages = count(() => {
      before = Math.max(0, pagesNow());
      turn((name) => {
        const now = pagesNow();
        perStep[name] += (now - before) / WAL_TURNS;
        before = now;
      });
    });
    return { pages, perStep };
  };
  const plainPages = count(plain("agent:bench:wal-plain", "wal-plain"));
  const inputs = bySteps(oneStep("agent:bench:wal-inputs", "wal-inputs"), ONE_STEP_STEPS);
  const separate = bySteps(withInputs("agent:bench:wal-sep", "wal-sep"), SEPARATE_STEPS);
  const keyedPages = count(oneStep("agent:bench:wal-keyed", "wal-keyed", { keyed: true }));
  agent.db.exec("PRAGMA wal_autocheckpoint = 1000");
  return {
    pageSize,
    plainPages,
    inputPages: inputs.pages,
    perStep: inputs.perStep,
    keyedPages,
    separatePages: separate.pages,
    separatePerStep: separate.perStep,
  };
}

async function measure() {
  return withTempDir("inbound", (dir) => {
    // Inline: no checkpointer thread may fold the WAL back while its frames are counted.
    const home = openStateHome({ home: join(dir, "home"), checkpoints: "inline" });
    const agent = home.agent(AGENT);
    watchWal(agent.db.path);
    progress(`inbound: seeding ${fmtCount(SEEDED)} completed inputs and their turns`);
    seed(home);
    walPhase(`seeding ${fmtCount(SEEDED)} completed inputs`);
    const floorDb = openBareDb(join(dir, "floor.sqlite"), { schema: true });
    progress("inbound: counting WAL pages per turn");
    const wal = walPages(home);
    progress("inbound: timing turns");
    const timing = timeTurns(home, floorDb);
    walPhase("timed turns");
    floorDb.close();
    home.close();
    return { wal, timing };
  });
}

function stepRows(perStep, steps) {
  return Object.keys(perStep).map((name) => [
    name,
    perStep[name].toFixed(2),
    `${fmtUs(steps[name].p50)} / ${fmtUs(steps[name].p99)}`,
  ]);
}

export async function run() {
  const { wal, timing } = await measure();
  const addedPages = wal.inputPages - wal.plainPages;
  const addedUs = timing.inputs.p50 - timing.plain.p50;
  const targets = [
    {
      name: `inbound: accept+claim+complete add ≤ ${TARGET_PAGES} WAL pages to a turn, over ${fmtCount(SEEDED)} inputs`,
      value: addedPages.toFixed(2),
      met: addedPages <= TARGET_PAGES,
    },
    {
      name: `inbound: accept+claim+complete add ≤ ${TARGET_P50_US / 1000} ms p50 to a turn`,
      value: fmtUs(addedUs),
      met: addedUs <= TARGET_P50_US,
    },
    ...walTargets("inbound"),
  ];
  const row = (name, pages, t) => [name, pages.toFixed(2), `${fmtUs(t.p50)} / ${fmtUs(t.p99)}`];
  const separateAdded = wal.separatePages - wal.plainPages;
  const markdown = [
    "## Inbound inputs",
    "",
    "A **turn** = `transcripts.append` of the user message (with an idempotency key) and of the",
    "assistant reply: two events, two transactions, as a gateway without inputs writes them.",
    "The **turn with inputs** = `inputs.accept` with `claim` and the user message as `events`",
    "(one transaction) + `inputs.complete` with the reply appended in the completing transaction.",
    "Its user message has no transcript idempotency key: the input's key keeps a redelivery from",
    "appending it again. The row after it counts the same turn with that key as well.",
    "**By separate calls** = `inputs.accept` (its own transaction, when the message arrives) +",
    "`inputs.claim` + the user message append + `inputs.complete` with the reply.",
    "**Floor** = the store's own insert (claimed) and complete statements through bare SQLite (the",
    "run's engine) on a database of the same schema files, autocommit, JSON pre-encoded, no",
    "transcript: what the store adds is checks, JSON and row mapping.",
    `The agent database holds ${fmtCount(SEEDED)} completed inputs (over ${SEED_KEYS} session keys,`,
    "each with its two events) before the run. WAL pages = the -wal file's growth ÷ frame size over",
    `${fmtCount(WAL_TURNS)} turns, auto-checkpoint off (${wal.pageSize}-byte pages).`,
    "",
    table(
      ["", "WAL pages per turn", "p50 / p99 per turn", "target", "met?"],
      [
        [...row("turn", wal.plainPages, timing.plain), "", ""],
        [...row("turn with inputs", wal.inputPages, timing.inputs), "", ""],
        [
          "added by inputs",
          addedPages.toFixed(2),
          `${fmtUs(addedUs)} (p50)`,
          `≤ ${TARGET_PAGES} pages, ≤ ${TARGET_P50_US / 1000} ms`,
          `pages ${met(addedPages <= TARGET_PAGES)}, p50 ${met(addedUs <= TARGET_P50_US)}`,
        ],
        [
          "turn with inputs, user message keyed in the transcript too",
          wal.keyedPages.toFixed(2),
          "–",
          `+${(wal.keyedPages - wal.plainPages).toFixed(2)} pages`,
          "",
        ],
        [...row("turn with inputs by separate calls", wal.separatePages, timing.separate), "", ""],
        [
          "added by separate calls",
          separateAdded.toFixed(2),
          `${fmtUs(timing.separate.p50 - timing.plain.p50)} (p50)`,
          "",
          "",
        ],
        [
          "floor: insert claimed + complete, bare",
          "–",
          `${fmtUs(timing.floor.p50)} / ${fmtUs(timing.floor.p99)}`,
          "",
          "",
        ],
      ],
    ),
    "",
    "### The turn with inputs, step by step",
    "",
    table(["step", "WAL pages", "p50 / p99"], stepRows(wal.perStep, timing.steps)),
    "",
    "### By separate calls, step by step",
    "",
    table(["step", "WAL pages", "p50 / p99"], stepRows(wal.separatePerStep, timing.separateSteps)),
  ].join("\n");
  return { name: "inbound", markdown, targets };
}

await runIfMain(import.meta.url, run);
