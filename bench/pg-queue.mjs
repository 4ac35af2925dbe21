// The control plane's delivery queue on PostgreSQL against the embedded SQLite one, in one run:
// enqueue + claim + ack cycles per second on one connection, and how long a waiting worker takes
// to wake after another host's enqueue (LISTEN/NOTIFY on PostgreSQL; an in-process signal on
// SQLite, which is the floor). PostgreSQL is a throwaway cluster on loopback with fsync and
// synchronous_commit on, as a real one would run.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { PG_QUEUE_SQL } from "../dist/control-plane/pg-queue-sql.js";
import { pgStatements, query } from "../dist/control-plane/pg-statements.js";
import { openControlPlane } from "../dist/index.js";
import { startCluster } from "../scripts/postgres-cluster.mjs";
import {
  fmtRate,
  fmtRatio,
  fmtUs,
  median,
  met,
  progress,
  QUICK,
  runIfMain,
  stats,
  table,
  withTempDir,
} from "./lib.mjs";

const QUEUE = "outbound-delivery";
const CYCLES = QUICK
  ? { warmup: 100, iterations: 500, rounds: 2 }
  : { warmup: 500, iterations: 3_000, rounds: 3 };
const WAKES = QUICK ? 100 : 500;
const TARGET_CYCLES = 500;
const TARGET_WAKE_P99_MS = 10;
const PAYLOAD = {
  channel: "telegram",
  to: "chat-1234567890",
  payloads: [
    { text: "Here is the summary you asked for: three papers, one line each, with links." },
  ],
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One enqueue + claim + ack through the control plane. */
function storeCycle(cp) {
  let n = 0;
  return async () => {
    await cp.queue.enqueue(QUEUE, { id: `c${n++}`, payload: PAYLOAD });
    const entry = await cp.queue.claim(QUEUE, "bench");
    await cp.queue.ack(QUEUE, entry.id, entry.leaseId);
  };
}

/** The floor: the control plane's own three statements on a bare `pg` client, values pre-built. */
function floorCycle(client) {
  const sql = pgStatements("floor", PG_QUEUE_SQL);
  const json = JSON.stringify(PAYLOAD);
  let n = 0;
  return async () => {
    const now = Date.now();
    await query(client, sql.insert, {
      ...{ queue: QUEUE, id: `f${n++}`, status: "pending", payload: json, sessionKey: null },
      ...{ channel: null, availableAt: now, retryCount: 0, lastError: null, enqueuedAt: now },
      ...{ now, failedAt: null, idempotencyKey: null, agentId: null, conversationId: null },
    });
    const leaseId = randomUUID();
    const [row] = await query(client, sql.claim, {
      ...{ queue: QUEUE, owner: "bench", leaseId, now, leaseUntil: now + 60_000 },
    });
    await query(client, sql.ack, {
      queue: QUEUE,
      id: row.id,
      leaseId,
      now,
      platformMessageId: null,
    });
  };
}

/** Rounds of each case interleaved (A B A B …) after a warm-up, so machine noise hits them alike. */
async function cycles(cases) {
  const state = Object.fromEntries(Object.keys(cases).map((k) => [k, { samples: [], rates: [] }]));
  for (const fn of Object.values(cases)) for (let i = 0; i < CYCLES.warmup; i++) await fn();
  for (let round = 0; round < CYCLES.rounds; round++) {
    for (const [name, fn] of Object.entries(cases)) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < CYCLES.iterations; i++) {
        const t0 = process.hrtime.bigint();
        await fn();
        state[name].samples.push(Number(process.hrtime.bigint() - t0));
      }
      state[name].rates.push((CYCLES.iterations * 1e9) / Number(process.hrtime.bigint() - start));
    }
  }
  const out = {};
  for (const [name, s] of Object.entries(state))
    out[name] = { ...stats(s.samples), opsPerSec: median(s.rates) };
  return out;
}

/** From the producer's enqueue call to the waiting worker's wake-up, one waiter at a time. */
async function wakeUps(waiter, producer) {
  const samples = [];
  for (let i = 0; i < WAKES; i++) {
    let woke = 0n;
    const waiting = waiter.queue.waitForWork("wake", 5_000).then((found) => {
      woke = process.hrtime.bigint();
      return found;
    });
    await sleep(2); // the waiter has read the (empty) queue and is waiting
    const t0 = process.hrtime.bigint();
    await producer.queue.enqueue("wake", { payload: i });
    if (!(await waiting)) throw new Error("waitForWork timed out after an enqueue");
    samples.push(Number(woke - t0));
    const entry = await waiter.queue.claim("wake", "bench");
    await waiter.queue.ack("wake", entry.id, entry.leaseId);
  }
  return stats(samples);
}

async function measureSqlite() {
  return withTempDir("pg-queue", async (home) => {
    progress("pg-queue: SQLite (embedded)");
    const cp = await openControlPlane({ home });
    const producer = await openControlPlane({ home });
    try {
      const { store } = await cycles({ store: storeCycle(cp) });
      return { name: "SQLite (embedded)", store, wake: await wakeUps(cp, producer) };
    } finally {
      await producer.close();
      await cp.close();
    }
  });
}

async function measurePostgres(durable) {
  const name = `PostgreSQL, fsync ${durable ? "on" : "off"}`;
  progress(`pg-queue: starting a throwaway PostgreSQL (${name})`);
  const cluster = await startCluster({ durable });
  const cp = await openControlPlane({ url: cluster.url, maxConnections: 1 });
  const producer = await openControlPlane({ url: cluster.url, maxConnections: 1 });
  const client = new pg.Client(cluster.url);
  await client.connect();
  try {
    progress(`pg-queue: ${name}, cycles`);
    const { store, floor } = await cycles({ store: storeCycle(cp), floor: floorCycle(client) });
    progress(`pg-queue: ${name}, wake-ups`);
    return { name, store, floor, wake: await wakeUps(cp, producer) };
  } finally {
    await client.end();
    await producer.close();
    await cp.close();
    cluster.stop();
  }
}

export async function run() {
  const results = [
    await measureSqlite(),
    await measurePostgres(true),
    await measurePostgres(false),
  ];
  // Judged on the durable cluster: that is how PostgreSQL runs in production.
  const pg = results[1];
  const cyclesMet = pg.store.opsPerSec >= TARGET_CYCLES;
  const wakeMet = pg.wake.p99 <= TARGET_WAKE_P99_MS * 1000;
  const rows = results.map(({ name, store, floor, wake }) => [
    name,
    fmtRate(store.opsPerSec),
    `${fmtUs(store.p50)} / ${fmtUs(store.p99)}`,
    floor ? fmtRate(floor.opsPerSec) : "–",
    floor ? fmtRatio(store.opsPerSec / floor.opsPerSec) : "–",
    `${fmtUs(wake.p50)} / ${fmtUs(wake.p99)}`,
  ]);
  const markdown = [
    "## Control plane on PostgreSQL: delivery queue",
    "",
    "One cycle = `queue.enqueue` + `queue.claim` + `queue.ack` through `openControlPlane`, awaited one",
    "after the other on one connection (PostgreSQL: pool of 1; each call is one statement and one",
    "commit; the claim is an `UPDATE … FOR UPDATE SKIP LOCKED`). **Floor** = the same three",
    "statements (the control plane's own SQL text) on a bare `pg` client with pre-built values.",
    "Wake-up = from a second control plane's `enqueue` call to the return of a pending",
    "`waitForWork` (PostgreSQL: `pg_notify` sent at the insert's commit, received on a dedicated",
    "LISTEN connection; SQLite: the process's in-process signal). PostgreSQL is a throwaway",
    "cluster on 127.0.0.1 with synchronous_commit on, run once with fsync on (as in production:",
    "three fsyncs per cycle) and once with fsync off (what the control plane costs without the disk).",
    "",
    table(
      ["backend", "cycles/s", "cycle p50 / p99", "floor cycles/s", "÷ floor", "wake-up p50 / p99"],
      rows,
    ),
    "",
    table(
      ["target (fsync on)", "value", "met?"],
      [
        [`PostgreSQL ≥ ${TARGET_CYCLES} cycles/s`, fmtRate(pg.store.opsPerSec), met(cyclesMet)],
        [`PostgreSQL wake-up p99 ≤ ${TARGET_WAKE_P99_MS} ms`, fmtUs(pg.wake.p99), met(wakeMet)],
      ],
    ),
  ].join("\n");
  return {
    name: "pg-queue",
    markdown,
    targets: [
      {
        name: `PostgreSQL queue ≥ ${TARGET_CYCLES} enqueue+claim+ack cycles/s (fsync on)`,
        value: `${fmtRate(pg.store.opsPerSec)}/s`,
        met: cyclesMet,
      },
      {
        name: `PostgreSQL NOTIFY wake-up p99 ≤ ${TARGET_WAKE_P99_MS} ms`,
        value: fmtUs(pg.wake.p99),
        met: wakeMet,
      },
    ],
  };
}

await runIfMain(import.meta.url, run);
