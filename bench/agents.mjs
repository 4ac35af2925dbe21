// Many agents in one process: a home with BENCH_AGENTS agents (default 10,000; 500 with
// BENCH_QUICK=1), each with one session of 20 events, touched in random order through the pool of
// open agent databases (default cap, 64). Peak RSS and peak open file descriptors (counted in
// /proc/self/fd) stay flat however many agents there are; an append to an evicted (cold) agent pays
// one reopen, an append to an open (warm) one does not. The descriptor target (3 × cap + 20) is on
// the descriptors agentstate adds: those the process held before the home opened (about 20 for
// Node itself and its stdio) are reported apart. The floor of a reopen is bare SQLite doing the
// least any reopen does, on the same files after the home closed: open the file, set the
// connection pragmas (the first that needs the schema makes SQLite parse it), read, close.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { agentDbRelativePath } from "../dist/home-paths.js";
import { openStateHome } from "../dist/index.js";
import {
  fmtBytes,
  fmtCount,
  fmtRatio,
  fmtUs,
  met,
  openBareDb,
  prng,
  progress,
  QUICK,
  runIfMain,
  stats,
  table,
  withTempDir,
} from "./lib.mjs";

const AGENTS = Number(process.env.BENCH_AGENTS ?? (QUICK ? 500 : 10_000));
const EVENTS = 20;
const REOPEN_TARGET_US = 1000;
const nowNs = () => process.hrtime.bigint();

const openFds = () => readdirSync("/proc/self/fd").length;
const peak = { rss: 0, fds: 0 };
function sample() {
  peak.rss = Math.max(peak.rss, process.memoryUsage().rss);
  peak.fds = Math.max(peak.fds, openFds());
}

const event = (i) => ({ type: "message", message: { role: "user", content: `note ${i}` } });
const agentId = (i) => `agent-${String(i).padStart(6, "0")}`;

function timed(samples, fn) {
  const t0 = nowNs();
  fn();
  samples.push(Number(nowNs() - t0));
}

function seed(home) {
  for (let i = 0; i < AGENTS; i++) {
    const id = agentId(i);
    home.transcripts.appendMany(
      { agentId: id, sessionId: "s1" },
      Array.from({ length: EVENTS }, (_, n) => event(n)),
    );
    if (i % 100 === 0) sample();
    if (i % 1000 === 999) progress(`agents: seeded ${fmtCount(i + 1)} agents`);
  }
}

/** Every agent once, in random order: a cold append, a warm one, then a reopen of another. */
function touch(home, random) {
  const order = Array.from({ length: AGENTS }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const cold = [];
  const warm = [];
  const reopen = [];
  order.forEach((n, k) => {
    const scope = { agentId: agentId(n), sessionId: "s1" };
    timed(cold, () => home.transcripts.append(scope, event(100)));
    timed(warm, () => home.transcripts.append(scope, event(101)));
    // The agent touched 2 × cap steps ago has been evicted since.
    const back = order[k - 2 * home.agentPool.maxOpenAgents];
    if (back !== undefined) timed(reopen, () => home.agent(agentId(back), { create: false }));
    if (k % 100 === 0) sample();
  });
  return { cold: stats(cold), warm: stats(warm), reopen: stats(reopen) };
}

/**
 * Bare SQLite's reopen of `n` agent files in random order: open, the connection pragmas (which
 * parse the schema), one read, close. The files are closed everywhere, as an evicted agent's is.
 */
function bareReopen(homePath, random, n) {
  const samples = [];
  for (let k = 0; k < n; k++) {
    const path = join(homePath, agentDbRelativePath(agentId(Math.floor(random() * AGENTS))));
    timed(samples, () => {
      const db = openBareDb(path);
      db.prepare("PRAGMA user_version").get();
      db.close();
    });
  }
  return stats(samples);
}

export async function run() {
  return withTempDir("agents", (dir) => {
    const baseFds = openFds();
    const homePath = join(dir, "home");
    const home = openStateHome({ home: homePath });
    let closed = false;
    try {
      progress(`agents: seeding ${fmtCount(AGENTS)} agents × ${EVENTS} events`);
      seed(home);
      progress(`agents: touching ${fmtCount(AGENTS)} agents in random order`);
      const result = touch(home, prng(42));
      sample();
      const pool = home.agentPool;
      home.close();
      closed = true;
      progress("agents: bare SQLite reopens of the same files");
      const floor = bareReopen(homePath, prng(7), Math.min(AGENTS, 2000));
      const addedFds = peak.fds - baseFds;
      const fdTarget = 3 * pool.maxOpenAgents + 20;
      const targets = [
        {
          name: `agents: file descriptors added ≤ 3 × cap + 20 (${fdTarget})`,
          value: addedFds,
          met: addedFds <= fdTarget,
        },
        {
          name: "agents: reopen p50 (µs)",
          value: result.reopen.p50,
          met: result.reopen.p50 <= REOPEN_TARGET_US,
        },
      ];
      const markdown = [
        `## Many agents (${fmtCount(AGENTS)} agents × ${EVENTS} events, cap ${pool.maxOpenAgents})`,
        "",
        `Peak RSS ${fmtBytes(peak.rss)}, peak open file descriptors ${peak.fds} ` +
          `(${addedFds} added to the ${baseFds} the process held before the home opened; target ` +
          `≤ ${fdTarget}); the pool opened ` +
          `${fmtCount(pool.opened)} times and evicted ${fmtCount(pool.evicted)} times ` +
          `(${pool.openedOverCap} opens past the cap). A reopen in a full pool also closes the agent it ` +
          `evicts.`,
        "",
        table(
          ["", "n", "p50", "p99", "max", "p50 × floor", "target", "met?"],
          [
            ["append, cold (evicted) agent", result.cold, ""],
            ["append, warm (open) agent", result.warm, ""],
            ["reopen (`home.agent`)", result.reopen, `≤ ${fmtUs(REOPEN_TARGET_US)}`],
            ["floor: bare SQLite open, pragmas, read, close", floor, ""],
          ].map(([name, s, target]) => [
            name,
            fmtCount(s.n),
            fmtUs(s.p50),
            fmtUs(s.p99),
            fmtUs(s.max),
            fmtRatio(s.p50 / floor.p50),
            target,
            target ? met(s.p50 <= REOPEN_TARGET_US) : "",
          ]),
        ),
      ].join("\n");
      return { name: "agents", markdown, targets };
    } finally {
      if (!closed) home.close();
    }
  });
}

await runIfMain(import.meta.url, run);
