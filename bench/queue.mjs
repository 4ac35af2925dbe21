// Delivery queue throughput: one enqueue + claim + ack cycle through DeliveryQueueStore, against
// the bare-engine floor of the same three statements (the store's own SQL text) on a
// database built from the same schema files, with an empty queue and with a backlog.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { openDatabase } from "../dist/db/database.js";
import { loadMigrations } from "../dist/db/schema.js";
import { QUEUE_SQL } from "../dist/stores/global/delivery-queue-sql.js";
import { DeliveryQueueStore } from "../dist/stores/global/delivery-queue-store.js";
import {
  compare,
  fmtCount,
  fmtRate,
  fmtRatio,
  fmtUs,
  met,
  openBareDb,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const QUEUE = "outbound-delivery";
// Due entries waiting, and settled receipts kept (which claim must not have to walk past).
const CASES = QUICK
  ? [
      { backlog: 0, receipts: 0 },
      { backlog: 5_000, receipts: 0 },
      { backlog: 0, receipts: 5_000 },
    ]
  : [
      { backlog: 0, receipts: 0 },
      { backlog: 100_000, receipts: 0 },
      { backlog: 0, receipts: 100_000 },
    ];
const CASE = QUICK
  ? { warmup: 200, iterations: 1_000, rounds: 2 }
  : { warmup: 1_000, iterations: 5_000, rounds: 5 };
const TARGET_SHARE = 0.5;
const LEASE_MS = 60_000;

/** An outbound delivery as the gateway queues it (~400 bytes of JSON). */
const PAYLOAD = {
  channel: "telegram",
  to: "chat-1234567890",
  accountId: "default",
  payloads: [
    {
      text: "Here is the summary you asked for: three papers on retrieval-augmented generation, each with a one-line takeaway and a link. The second one is the most relevant to your question about long contexts.",
      replyToCurrent: true,
    },
  ],
  mirror: { sessionKey: "agent:main:main", agentId: "main" },
  bestEffort: false,
};
const PAYLOAD_JSON = JSON.stringify(PAYLOAD);

/** The floor: the store's statements, bare, with the values the store would bind. */
function floorCycle(db) {
  const insert = db.prepare(QUEUE_SQL.insert);
  const claim = db.prepare(QUEUE_SQL.claim);
  const ack = db.prepare(QUEUE_SQL.ack);
  let n = 0;
  return () => {
    const now = Date.now();
    insert.run({
      queue: QUEUE,
      id: `f${n++}`,
      status: "pending",
      payload: PAYLOAD_JSON,
      sessionKey: null,
      channel: "telegram",
      idempotencyKey: null,
      agentId: null,
      conversationId: null,
      availableAt: now,
      retryCount: 0,
      lastError: null,
      enqueuedAt: now,
      now,
      failedAt: null,
    });
    const leaseId = randomUUID();
    const row = claim.get({
      queue: QUEUE,
      owner: "bench",
      leaseId,
      now,
      leaseUntil: now + LEASE_MS,
    });
    ack.run({ queue: QUEUE, id: row.id, leaseId, now, platformMessageId: null });
  };
}

function storeCycle(store) {
  let n = 0;
  return () => {
    store.enqueue(QUEUE, { id: `s${n++}`, payload: PAYLOAD, channel: "telegram" });
    const entry = store.claim(QUEUE, "bench");
    store.ack(QUEUE, entry.id, entry.leaseId);
  };
}

/** Entries already waiting (due now), so every cycle claims the oldest of `size` and adds one. */
function seedBacklog(store, size) {
  store.db.tx(() => {
    for (let i = 0; i < size; i++) {
      store.queue.enqueue(QUEUE, {
        id: `b${i}`,
        payload: PAYLOAD,
        channel: "telegram",
        availableAt: 0,
      });
    }
  });
}

/** Settled entries kept as receipts, as `settle` leaves them. */
function seedReceipts(db, size) {
  const insert = db.prepare(
    `INSERT INTO delivery_queue_entries (queue_name, id, status, entry_json, channel, available_at,
       lease_owner, enqueued_at, updated_at, settled_at, platform_message_id)
     VALUES (?, ?, 'sent', ?, 'telegram', 1, 'bench', 1, 1, 1, ?)`,
  );
  db.tx(() => {
    for (let i = 0; i < size; i++) insert.run(QUEUE, `r${i}`, PAYLOAD_JSON, `m${i}`);
  });
}

async function measure({ backlog, receipts }) {
  return withTempDir("queue", (dir) => {
    progress(
      `queue: backlog ${fmtCount(backlog)}, receipts ${fmtCount(receipts)}, seeding store and floor`,
    );
    const storeDb = openDatabase({ path: join(dir, "store.sqlite"), role: "global" });
    const store = new DeliveryQueueStore(storeDb, { leaseMs: LEASE_MS });
    seedBacklog({ db: storeDb, queue: store }, backlog);
    seedReceipts(storeDb, receipts);
    const floorPath = join(dir, "floor.sqlite");
    // Same schema files as the store's database, applied to a bare connection.
    const setup = openDatabase({ path: floorPath, role: "global" });
    seedBacklog({ db: setup, queue: new DeliveryQueueStore(setup) }, backlog);
    seedReceipts(setup, receipts);
    setup.close();
    const floorDb = openBareDb(floorPath);
    progress(`queue: backlog ${fmtCount(backlog)}, receipts ${fmtCount(receipts)}, cycles`);
    const result = compare(
      { store: { ...CASE, fn: storeCycle(store) }, floor: { ...CASE, fn: floorCycle(floorDb) } },
      { rounds: CASE.rounds },
    );
    storeDb.close();
    floorDb.close();
    return { backlog, receipts, ...result };
  });
}

export async function run() {
  if (loadMigrations("global").length === 0) throw new Error("no global schema in dist/");
  const results = [];
  for (const shape of CASES) results.push(await measure(shape));
  const rows = results.map(({ backlog, receipts, store, floor }) => [
    fmtCount(backlog),
    fmtCount(receipts),
    fmtRate(store.opsPerSec),
    `${fmtUs(store.p50)} / ${fmtUs(store.p99)}`,
    fmtRate(floor.opsPerSec),
    `${fmtUs(floor.p50)} / ${fmtUs(floor.p99)}`,
    fmtRatio(store.opsPerSec / floor.opsPerSec),
    `≥ ${TARGET_SHARE} × floor`,
    met(store.opsPerSec / floor.opsPerSec >= TARGET_SHARE),
  ]);
  const targets = results.map(({ backlog, receipts, store, floor }) => ({
    name: `queue enqueue+claim+ack ≥ 50% of the floor's cycles/s, backlog ${fmtCount(backlog)}${receipts ? `, ${fmtCount(receipts)} receipts` : ""}`,
    value: `${fmtRatio(store.opsPerSec / floor.opsPerSec)} × floor`,
    met: store.opsPerSec / floor.opsPerSec >= TARGET_SHARE,
  }));
  const markdown = [
    "## Delivery queue",
    "",
    "One cycle = `queue.enqueue(queue, { payload })` + `queue.claim(queue, owner)` (the oldest due",
    "entry, leased for 60 s) + `queue.ack(queue, id, leaseId)` (settles it as sent; the row stays as a receipt): three single-statement write",
    "transactions. **Floor** = the same three SQL statements (the store's own text) through bare",
    "SQLite (the run's engine) on a database built from the same schema files, with the same pragmas, the same",
    "random lease ids and pre-encoded JSON: what the store adds is argument checks, JSON encoding",
    "and decoding, and row mapping.",
    "“backlog” = due entries already waiting (each cycle claims the oldest and adds one, so the queue and its indexes keep that many rows).",
    "“receipts” = settled entries kept before the run (every cycle adds one more): claim walks a partial index of pending rows only, so they should cost nothing.",
    "",
    table(
      [
        "backlog",
        "receipts",
        "store cycles/s",
        "store p50 / p99",
        "floor cycles/s",
        "floor p50 / p99",
        "store ÷ floor",
        "target",
        "met?",
      ],
      rows,
    ),
  ].join("\n");
  return { name: "queue", markdown, targets };
}

await runIfMain(import.meta.url, run);
