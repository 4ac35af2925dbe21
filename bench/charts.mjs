// The dashboard's chart APIs on a home of 1,000,000 events across four agents (seeded like
// bench/usage.mjs, with models and recorded costs), with cron runs and delivery queues: each route
// of `agentstate serve` (its own process, as a user runs it) is asked over real HTTP, one request
// at a time, and timed from request to last byte. Each route is set against a floor measured in
// the same run on a bare connection: the plain SQL that gives the same numbers from the tables the
// route reads (the rollups, the cron and queue tables, dbstat, the session's events).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { openStateHome } from "../dist/index.js";
import { DeliveryQueueStore } from "../dist/stores/global/delivery-queue-store.js";
import {
  fmtBytes,
  fmtCount,
  fmtRatio,
  fmtUs,
  openBareDb,
  progress,
  QUICK,
  runIfMain,
  stats,
  table,
  withTempDir,
} from "./lib.mjs";
import { usageEvents } from "./usage.mjs";

const CLI = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const EVENTS = QUICK ? 80_000 : 1_000_000;
const AGENTS = ["a0", "a1", "a2", "a3"];
const SESSION_LENGTH = 10_000;
const SEED_BATCH = 5_000;
const CRON_JOBS = 20;
const CRON_DAYS = 30;
const RUNS_PER_DAY = 24;
const QUEUES = 5;
const QUEUE_ENTRIES = 2_000;
const RUNS = QUICK ? 20 : 50;
const TARGET_MS = 300;
const DAY = 86_400_000;

function seedAgent(agent, next, size) {
  for (let done = 0, session = 0; done < size; session++) {
    for (let n = 0; n < SESSION_LENGTH && done < size; n += SEED_BATCH) {
      const count = Math.min(SEED_BATCH, size - done);
      agent.transcripts.appendMany(`s-${session}`, Array.from({ length: count }, next));
      done += count;
    }
  }
}

function seedControlPlane(home) {
  const now = Date.now();
  for (let j = 0; j < CRON_JOBS; j++) {
    const id = `job-${j}`;
    home.cron.add({
      id,
      name: `${id} job`,
      agentId: AGENTS[j % AGENTS.length],
      enabled: true,
      schedule: { kind: "cron", expr: "0 * * * *" },
      payload: { kind: "agentTurn", message: `run ${id}` },
    });
    for (let d = 0; d < CRON_DAYS; d++) {
      for (let h = 0; h < RUNS_PER_DAY; h++) {
        const status = (d + h) % 11 === 0 ? "error" : (d + h) % 7 === 0 ? "skipped" : "ok";
        const ranAt = now - d * DAY - h * 3_600_000;
        home.cron.recordRun(id, {
          status,
          ranAt,
          durationMs: 900,
          error: status === "error" ? "timeout" : undefined,
        });
      }
    }
  }
  const queue = new DeliveryQueueStore(home.db);
  for (let q = 0; q < QUEUES; q++) {
    for (let i = 0; i < QUEUE_ENTRIES; i++) {
      queue.enqueue(`queue-${q}`, { payload: { to: `user-${i}@example.org` } });
    }
  }
}

function seed(path) {
  const home = openStateHome({ home: path });
  const per = EVENTS / AGENTS.length;
  AGENTS.forEach((agentId, i) => {
    progress(`charts: seeding ${agentId} with ${fmtCount(per)} events`);
    const agent = home.agent(agentId);
    seedAgent(agent, usageEvents(21 + i), per);
    // Caught up here, so the server finds nothing to index: a home at rest, not one still settling.
    agent.transcripts.index.indexPending();
  });
  // The first two sessions of a0: s-0 stays hot, s-1 goes cold (its events read from an archive).
  home.agent("a0").cold.move("s-1");
  progress("charts: seeding cron runs and delivery queues");
  seedControlPlane(home);
  const agents = home.listAgents().map((a) => ({ agentId: a.agentId, dbPath: a.dbPath }));
  const globalPath = home.db.path;
  home.close();
  return { agents, globalPath };
}

/** `agentstate serve` as a user runs it, on a free port; resolves with its base URL. */
function startServer(home) {
  const child = spawn(process.execPath, [CLI, "serve", "--home", home, "--port", "0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /(http:\/\/\S+?)\/?\s/.exec(out);
      if (match) resolve({ child, base: match[1] });
    });
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}`)));
  });
}

async function timeGet(url) {
  const t0 = process.hrtime.bigint();
  const res = await fetch(url);
  const body = await res.arrayBuffer();
  const ns = Number(process.hrtime.bigint() - t0);
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${Buffer.from(body)}`);
  return ns;
}

async function timeRoute(url) {
  const first = await timeGet(url);
  const samples = [];
  for (let i = 0; i < RUNS; i++) samples.push(await timeGet(url));
  return { first: first / 1e3, ...stats(samples) };
}

function timeSql(fn) {
  fn();
  const samples = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - t0));
  }
  return stats(samples);
}

/** On bare read-only connections: each route's numbers by plain SQL over the same tables. */
function floors({ agents, globalPath }) {
  const dbs = agents.map((a) => openBareDb(a.dbPath, { readonly: true }));
  const control = openBareDb(globalPath, { readonly: true });
  const all = (sql, ...args) => dbs.map((db) => db.prepare(sql).all(...args));
  const sessionUsage = `SELECT json_extract(event_json, '$.message.model') AS model, count(*) AS n,
      total(json_extract(event_json, '$.message.usage.input')) AS input,
      total(json_extract(event_json, '$.message.usage.cost.total')) AS cost
    FROM transcript_events
    WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = 's-0')
      AND json_extract(event_json, '$.message.role') = 'assistant' GROUP BY 1`;
  const result = {
    overview: timeSql(() =>
      all(`SELECT (SELECT count(*) FROM sessions) AS s, (SELECT count(*) FROM transcript_events) AS e,
        (SELECT max(created_at) FROM transcript_events) AS last`),
    ),
    storage: timeSql(() =>
      all("SELECT name, sum(pgsize) AS bytes FROM dbstat('main', 1) GROUP BY name"),
    ),
    events: timeSql(() =>
      all("SELECT day_start_at, sum(events) FROM usage_daily GROUP BY day_start_at"),
    ),
    byDay: timeSql(() =>
      all(`SELECT day_start_at, sum(input_tokens), sum(output_tokens), sum(cost), sum(messages)
        FROM usage_daily GROUP BY day_start_at`),
    ),
    byModel: timeSql(() =>
      all(`SELECT provider, model, sum(input_tokens), sum(output_tokens), sum(cost), sum(messages)
        FROM usage_daily GROUP BY provider, model`),
    ),
    byAgent: timeSql(() =>
      all(
        "SELECT sum(input_tokens), sum(output_tokens), sum(cost), sum(messages) FROM usage_daily",
      ),
    ),
    cron: timeSql(() =>
      control
        .prepare(
          `SELECT job_id, CAST((ran_at - ?) / ${DAY} AS INTEGER) AS day, status, count(*)
           FROM cron_run_logs WHERE ran_at >= ? GROUP BY 1, 2, 3`,
        )
        .all(Date.now() - 30 * DAY, Date.now() - 30 * DAY),
    ),
    deliveries: timeSql(() =>
      control
        .prepare("SELECT queue_name, status, count(*) FROM delivery_queue_entries GROUP BY 1, 2")
        .all(),
    ),
    sessionHot: timeSql(() => dbs[0].prepare(sessionUsage).all()),
  };
  for (const db of [...dbs, control]) db.close();
  return result;
}

const ROUTES = [
  ["home overview", "/api/overview", "overview"],
  ["storage by family", "/api/charts/storage", "storage"],
  ["events per agent per day", "/api/usage/events", "events"],
  ["usage by day", "/api/usage?by=day", "byDay"],
  ["usage by model", "/api/usage?by=model", "byModel"],
  ["usage by agent", "/api/usage?by=agent", "byAgent"],
  ["cron runs (30 days)", "/api/charts/cron", "cron"],
  ["delivery depth", "/api/charts/deliveries", "deliveries"],
  ["session usage, hot (10,000 events)", "/api/agents/a0/transcripts/s-0/usage", "sessionHot"],
  ["session usage, cold (10,000 events)", "/api/agents/a0/transcripts/s-1/usage", "sessionHot"],
];

export async function run() {
  return withTempDir("charts", async (dir) => {
    const seeded = seed(dir);
    const bytes = seeded.agents.reduce((sum, a) => sum + fileBytes(a.dbPath), 0);
    progress("charts: floors on bare connections");
    const floor = floors(seeded);
    const { child, base } = await startServer(dir);
    const results = [];
    try {
      for (const [name, path, floorKey] of ROUTES) {
        progress(`charts: ${name}`);
        results.push({ name, floorKey, ...(await timeRoute(`${base}${path}`)) });
      }
    } finally {
      child.kill("SIGTERM");
    }
    return report(results, floor, bytes);
  });
}

function fileBytes(path) {
  // Main file only: the WAL is checkpointed away when the seeding home closes.
  const db = openBareDb(path, { readonly: true });
  try {
    const pages = db.prepare("PRAGMA page_count").get().page_count;
    const size = db.prepare("PRAGMA page_size").get().page_size;
    return pages * size;
  } finally {
    db.close();
  }
}

function report(results, floor, bytes) {
  const worst = Math.max(...results.map((r) => r.p99 / 1000));
  const worstFirst = Math.max(...results.map((r) => r.first / 1000));
  const rows = results.map((r) => {
    const f = floor[r.floorKey];
    return [
      r.name,
      fmtUs(r.first),
      fmtUs(r.p50),
      fmtUs(r.p99),
      fmtUs(f.p50),
      fmtRatio(r.p50 / f.p50),
    ];
  });
  const markdown = [
    `## Chart APIs (${fmtCount(EVENTS)} events in ${AGENTS.length} agents, ${fmtBytes(bytes)} of agent databases)`,
    "",
    `Each route asked ${RUNS} times in a row over HTTP on loopback (one connection, request to last`,
    "byte) after a first ask, shown apart: it is the one that computes what a cache keeps (the",
    "storage breakdown). The floor is the plain SQL giving the same numbers from the same tables on a",
    "bare read-only connection, p50; for cold session usage it is the hot session's SQL.",
    "",
    table(["route", "first", "p50", "p99", "floor p50", "p50 / floor"], rows),
  ].join("\n");
  return {
    name: "charts",
    markdown,
    targets: [
      {
        name: `charts: every chart route p99 ≤ ${TARGET_MS} ms on ${fmtCount(EVENTS)} events`,
        value: `${worst.toFixed(1)} ms`,
        met: worst <= TARGET_MS,
      },
      {
        name: `charts: every chart route's first (uncached) answer ≤ ${TARGET_MS} ms`,
        value: `${worstFirst.toFixed(1)} ms`,
        met: worstFirst <= TARGET_MS,
      },
    ],
  };
}

await runIfMain(import.meta.url, run);
