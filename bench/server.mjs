// HTTP API latency: `agentstate serve` in its own process on loopback, driven by autocannon, on
// a home with 100,000 session entries (each with its session row) and one 16 MB transcript. The
// session list is measured on its first page, a page 50,000 entries deep and a key-prefix
// filter; the transcript page at the end and in the middle of the 16 MB transcript, against the
// same page of a 200-event transcript: equal latency shows the page does not load the whole log.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { openStateHome } from "../dist/index.js";
import {
  eventFactory,
  makeSessionEntry,
  makeUuid,
  makeVocabulary,
  sessionKeyOf,
} from "./fixtures.mjs";
import {
  fmtBytes,
  fmtCount,
  fmtRate,
  fmtRatio,
  prng,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const CLI = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const SESSIONS = QUICK ? 10_000 : 100_000;
const TRANSCRIPT_BYTES = (QUICK ? 2 : 16) * 1024 * 1024;
const SMALL_EVENTS = 200;
const ENTRY_BYTES = 2048;
const PAGE = 100;
const LIST_PAGE = 50;
const DURATION_S = QUICK ? 2 : 10;
const CONNECTIONS = [1, 8];
const TARGET_LIST_P50_MS = 20;
const TARGET_PAGE_P50_MS = 20;
/** The 16 MB transcript's page may cost at most this much more than the small one's. */
const TARGET_PAGE_RATIO = 2;

function seedSessions(agent) {
  const rand = prng(SESSIONS);
  const now = Date.now();
  agent.db.tx(() => {
    for (let i = 0; i < SESSIONS; i++) {
      const entry = makeSessionEntry(i, rand, ENTRY_BYTES);
      agent.sessions.upsert(sessionKeyOf(i), entry);
      agent.lifecycle.importSession({
        sessionId: entry.sessionId,
        sessionKey: sessionKeyOf(i),
        createdAt: now - SESSIONS + i,
      });
    }
  });
}

/** Appends generated events in batches until their stored JSON adds up to `bytes`. */
function seedTranscript(agent, sessionId, bytes, next) {
  let total = 0;
  while (total < bytes) {
    const stored = agent.transcripts.appendMany(sessionId, Array.from({ length: 500 }, next));
    for (const { event } of stored) total += Buffer.byteLength(JSON.stringify(event));
  }
}

function seed(dir) {
  const home = openStateHome({ home: dir });
  try {
    const agent = home.agent("main");
    progress(`server: seeding ${fmtCount(SESSIONS)} session entries and rows`);
    seedSessions(agent);
    const rand = prng(7);
    const next = eventFactory(makeVocabulary(), 11);
    const big = makeUuid(rand);
    progress(`server: appending a ${fmtBytes(TRANSCRIPT_BYTES)} transcript`);
    seedTranscript(agent, big, TRANSCRIPT_BYTES, next);
    const small = makeUuid(rand);
    agent.transcripts.appendMany(small, Array.from({ length: SMALL_EVENTS }, next));
    const info = (id) => agent.lifecycle.get(id);
    const bigRow = agent.db
      .prepare(
        "SELECT sum(length(event_json)) AS bytes FROM agentstate_events_v1 WHERE session_id = ?",
      )
      .get(big);
    // One transaction per batch leaves a WAL as large as the data: fold it in, so the size
    // reported is the database's.
    agent.db.checkpoint("TRUNCATE");
    return {
      big: info(big),
      small: info(small),
      bigBytes: bigRow.bytes,
      dbBytes: agent.db.sizeBytes(),
    };
  } finally {
    home.close();
  }
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

async function cannon(url, connections) {
  const result = await autocannon({ url, connections, duration: DURATION_S });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    // autocannon records latencies as whole milliseconds, so its own mean of sub-millisecond
    // requests counts mostly zeros and a few outliers. Each connection sends its next request
    // when the last answer ends, so the mean latency is connections ÷ request rate.
    mean: (connections * 1000) / result.requests.average,
    rps: result.requests.average,
    bytes: result.throughput.average / Math.max(1, result.requests.average),
  };
}

/** The cursor after `depth` entries, found by paging as a client would. */
async function cursorAt(base, depth) {
  let cursor;
  for (let seen = 0; seen < depth; seen += 1000) {
    const query = new URLSearchParams({ limit: "1000", ...(cursor ? { cursor } : {}) });
    const page = await (await fetch(`${base}/api/agents/main/sessions?${query}`)).json();
    cursor = page.nextCursor;
  }
  return cursor;
}

function cases(base, seeded, deepCursor) {
  const events = (session, afterSeq) =>
    `${base}/api/agents/main/transcripts/${session.sessionId}/events?afterSeq=${afterSeq}&limit=${PAGE}`;
  const sessions = `${base}/api/agents/main/sessions`;
  return [
    { name: "session list, first page", url: `${sessions}?limit=${LIST_PAGE}` },
    {
      name: `session list, ${fmtCount(SESSIONS / 2)} deep`,
      url: `${sessions}?limit=${LIST_PAGE}&cursor=${deepCursor}`,
    },
    {
      name: "session list, key prefix",
      url: `${sessions}?limit=${LIST_PAGE}&prefix=${encodeURIComponent("agent:main:telegram:direct:1000999")}`,
    },
    {
      name: `transcript page, ${fmtBytes(seeded.bigBytes)} log, last page`,
      url: events(seeded.big, seeded.big.eventCount - PAGE),
      big: true,
    },
    {
      name: `transcript page, ${fmtBytes(seeded.bigBytes)} log, middle`,
      url: events(seeded.big, Math.floor(seeded.big.eventCount / 2)),
      big: true,
    },
    {
      name: `transcript page, ${SMALL_EVENTS}-event log, last page`,
      url: events(seeded.small, SMALL_EVENTS - PAGE),
      small: true,
    },
    {
      name: `transcript tree, ${fmtBytes(seeded.bigBytes)} log (all identity rows)`,
      url: `${base}/api/agents/main/transcripts/${seeded.big.sessionId}/tree`,
    },
  ];
}

export async function run() {
  return withTempDir("server", async (dir) => {
    const home = join(dir, "home");
    const seeded = seed(home);
    const { child, base } = await startServer(home);
    try {
      const deepCursor = await cursorAt(base, SESSIONS / 2);
      const results = [];
      for (const c of cases(base, seeded, deepCursor)) {
        for (const connections of CONNECTIONS) {
          progress(`server: ${c.name}, ${connections} connection(s), ${DURATION_S} s`);
          results.push({ ...c, connections, ...(await cannon(c.url, connections)) });
        }
      }
      return report(seeded, results);
    } finally {
      child.kill("SIGTERM");
    }
  });
}

function report(seeded, results) {
  const serial = results.filter((r) => r.connections === 1);
  const find = (predicate) => serial.find(predicate);
  const list = find((r) => r.name === "session list, first page");
  const bigPage = find((r) => r.big);
  const smallPage = find((r) => r.small);
  // Means: autocannon's percentiles are whole milliseconds, too coarse for a ratio near 1.
  const ratio = bigPage.mean / smallPage.mean;
  const targets = [
    {
      name: `session list p50 < ${TARGET_LIST_P50_MS} ms at ${fmtCount(SESSIONS)} sessions`,
      value: `p50 ${list.p50} ms, p99 ${list.p99} ms`,
      met: list.p50 < TARGET_LIST_P50_MS,
    },
    {
      name: `transcript page p50 < ${TARGET_PAGE_P50_MS} ms on a ${fmtBytes(seeded.bigBytes)} transcript`,
      value: `p50 ${bigPage.p50} ms, p99 ${bigPage.p99} ms`,
      met: bigPage.p50 < TARGET_PAGE_P50_MS,
    },
    {
      name: `transcript page on ${fmtBytes(seeded.bigBytes)} ≤ ${TARGET_PAGE_RATIO}× the ${SMALL_EVENTS}-event page (mean latency)`,
      value: `${fmtRatio(ratio)}×`,
      met: ratio <= TARGET_PAGE_RATIO,
    },
  ];
  const rows = results.map((r) => [
    r.name,
    r.connections,
    `${r.p50} ms`,
    `${r.p99} ms`,
    `${r.mean.toFixed(2)} ms`,
    fmtRate(r.rps),
    fmtBytes(r.bytes),
  ]);
  const markdown = [
    "## HTTP API (agentstate serve)",
    "",
    `\`agentstate serve\` in its own process on 127.0.0.1, measured with autocannon (${DURATION_S} s per row,`,
    "keep-alive connections; latency is request to last byte: p50 / p99 as autocannon's whole",
    "milliseconds, mean = connections ÷ req/s, since each connection sends its next request as the",
    "last answer ends). The home",
    `has ${fmtCount(SESSIONS)} session entries of ~${fmtBytes(ENTRY_BYTES)} with their session rows, a transcript of`,
    `${fmtCount(seeded.big.eventCount)} events (${fmtBytes(seeded.bigBytes)} of event JSON) and one of ${SMALL_EVENTS} events; the agent`,
    `database is ${fmtBytes(seeded.dbBytes)}. Session list pages are ${LIST_PAGE} entries (a summary of each, plus`,
    `its session row); transcript pages are ${PAGE} events. The tree row reads every identity row of the`,
    "log (no event JSON) and is shown for scale: the dashboard fetches it once per conversation view.",
    "",
    table(["request", "connections", "p50", "p99", "mean", "req/s", "response"], rows),
  ].join("\n");
  return { name: "server", markdown, targets };
}

await runIfMain(import.meta.url, run);
