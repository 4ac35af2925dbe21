// Inbound inputs: what accepting, claiming and completing a message adds to a turn. A turn is the
// user message and the assistant reply appended to a session (two events, as a gateway without
// inputs writes them); the same turn with inputs is `accept` (its own transaction, when the message
// arrives), `claim`, the user message append, and `complete` with the reply appended in the
// completing transaction. Both run on one agent database already holding completed inputs.
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
  return { plain, withInputs };
}

/** Completed inputs over SEED_KEYS session keys, each with its turn's two events. */
function seed(home) {
  const { withInputs } = turns(home);
  const agent = home.agent(AGENT);
  const writers = Array.from({ length: SEED_KEYS }, (_, k) =>
    withInputs(`agent:${AGENT}:seed-${k}`, `seed-${k}`),
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
 * The floor: the store's own three statements through bare SQLite on a database of the same schema
 * files, autocommit each (as the store runs them), JSON pre-encoded, no transcript append.
 */
function floorInputs(db) {
  const insert = db.prepare(INPUT_SQL.insert);
  const claim = db.prepare(INPUT_SQL.claimOne);
  const complete = db.prepare(INPUT_SQL.complete);
  const body = JSON.stringify(payload(0));
  const outcome = JSON.stringify({ sessionId: "s", eventIds: ["e"], deliveryIds: [] });
  const holder = { owner: "turn", pid: process.pid, started: 1 };
  let n = 0;
  return () => {
    const now = Date.now();
    const inputId = `f${n}`;
    insert.get({
      inputId,
      sessionKey: "agent:bench:floor",
      idempotencyKey: `f${n++}`,
      payload: body,
      channel: null,
      conversationId: null,
      receivedAt: now,
      now,
    });
    claim.all({ ...holder, sessionKey: "agent:bench:floor", until: now + LEASE_MS });
    complete.get({ ...holder, inputId, now, outcome });
  };
}

/** Timing: plain turns, turns with inputs (each step timed too) and the floor, interleaved. */
function timeTurns(home, floorDb) {
  const { plain, withInputs } = turns(home);
  const plainTurn = plain("agent:bench:plain", "plain");
  const inputTurn = withInputs("agent:bench:inputs", "inputs");
  const steps = { accept: [], claim: [], "user append": [], "complete + reply": [] };
  let t0 = 0n;
  const timed = (name) => {
    const t = process.hrtime.bigint();
    steps[name].push(Number(t - t0));
    t0 = t;
  };
  const result = compare(
    {
      plain: { ...CASE, fn: plainTurn },
      inputs: {
        ...CASE,
        fn: () => {
          t0 = process.hrtime.bigint();
          inputTurn(timed);
        },
      },
      floor: { ...CASE, fn: floorInputs(floorDb) },
    },
    { rounds: CASE.rounds },
  );
  const warm = CASE.warmup;
  const stepStats = Object.fromEntries(
    Object.entries(steps).map(([name, samples]) => [name, stats(samples.slice(warm))]),
  );
  return { ...result, steps: stepStats };
}

/** WAL pages per turn (and per step of an input turn), auto-checkpoint off while counting. */
function walPages(home) {
  const agent = home.agent(AGENT);
  const pageSize = agent.db.prepare("PRAGMA page_size").get().page_size;
  const walPath = `${agent.db.path}-wal`;
  const pagesNow = () => (statSync(walPath).size - 32) / (pageSize + 24);
  const { plain, withInputs } = turns(home);
  agent.db.exec("PRAGMA wal_autocheckpoint = 0");
  const count = (fn) => {
    agent.db.checkpoint("TRUNCATE");
    for (let i = 0; i < WAL_TURNS; i++) fn();
    return Math.max(0, pagesNow()) / WAL_TURNS;
  };
  const plainPages = count(plain("agent:bench:wal-plain", "wal-plain"));
  const perStep = { accept: 0, claim: 0, "user append": 0, "complete + reply": 0 };
  const inputTurn = withInputs("agent:bench:wal-inputs", "wal-inputs");
  let before = 0;
  const inputPages = count(() => {
    before = Math.max(0, pagesNow());
    inputTurn((name) => {
      const now = pagesNow();
      perStep[name] += (now - before) / WAL_TURNS;
      before = now;
    });
  });
  agent.db.exec("PRAGMA wal_autocheckpoint = 1000");
  return { pageSize, plainPages, inputPages, perStep };
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

function stepRows(wal, timing) {
  return Object.keys(wal.perStep).map((name) => [
    name,
    wal.perStep[name].toFixed(2),
    `${fmtUs(timing.steps[name].p50)} / ${fmtUs(timing.steps[name].p99)}`,
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
  const markdown = [
    "## Inbound inputs",
    "",
    "A **turn** = `transcripts.append` of the user message (with an idempotency key) and of the",
    "assistant reply: two events, two transactions, as a gateway without inputs writes them.",
    "The **turn with inputs** = `inputs.accept` (its own transaction, when the message arrives) +",
    "`inputs.claim` + the same user message append + `inputs.complete` with the reply appended in",
    "the completing transaction. **Floor** = the store's own insert, claim and complete statements",
    "through bare SQLite (the run's engine) on a database of the same schema files, autocommit,",
    "JSON pre-encoded, no transcript: what the store adds is checks, JSON and row mapping.",
    `The agent database holds ${fmtCount(SEEDED)} completed inputs (over ${SEED_KEYS} session keys,`,
    "each with its two events) before the run. WAL pages = the -wal file's growth ÷ frame size over",
    `${fmtCount(WAL_TURNS)} turns, auto-checkpoint off (${wal.pageSize}-byte pages).`,
    "",
    table(
      ["", "WAL pages per turn", "p50 / p99 per turn", "target", "met?"],
      [
        [
          "turn",
          wal.plainPages.toFixed(2),
          `${fmtUs(timing.plain.p50)} / ${fmtUs(timing.plain.p99)}`,
          "",
          "",
        ],
        [
          "turn with inputs",
          wal.inputPages.toFixed(2),
          `${fmtUs(timing.inputs.p50)} / ${fmtUs(timing.inputs.p99)}`,
          "",
          "",
        ],
        [
          "added by inputs",
          addedPages.toFixed(2),
          `${fmtUs(addedUs)} (p50)`,
          `≤ ${TARGET_PAGES} pages, ≤ ${TARGET_P50_US / 1000} ms`,
          `pages ${met(addedPages <= TARGET_PAGES)}, p50 ${met(addedUs <= TARGET_P50_US)}`,
        ],
        [
          "floor: insert + claim + complete, bare",
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
    table(["step", "WAL pages", "p50 / p99"], stepRows(wal, timing)),
  ].join("\n");
  return { name: "inbound", markdown, targets };
}

await runIfMain(import.meta.url, run);
