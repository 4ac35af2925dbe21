// Search across many agents: a home with BENCH_SEARCH_AGENTS agents (default 3,000; 200 with
// BENCH_QUICK=1), each with one session of 20 events, searched with `home.transcripts.search(q)`
// and no agentId, so every agent's index is opened (each over a read-only connection of its own,
// closed before the next; the pool is left as it was), the agents spread over the search threads
// and the caller's thread. Beside it, in the same rounds, the same agents read one after the other
// on the caller's thread alone (`home.readAgent`, as the search did before it had threads).
// Reports the latency of one whole-home search and the peak RSS while it runs.
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { openStateHome } from "../dist/index.js";
import {
  fmtBytes,
  fmtCount,
  fmtRatio,
  fmtUs,
  prng,
  progress,
  QUICK,
  runIfMain,
  stats,
  table,
  withTempDir,
} from "./lib.mjs";

const AGENTS = Number(process.env.BENCH_SEARCH_AGENTS ?? (QUICK ? 200 : 3000));
const EVENTS = 20;
const QUERIES = ["deploy", "rollback plan", "invoice", "kubernetes", "weather tokyo"];
const ROUNDS = QUICK ? 1 : 2;
const WORDS = [
  "deploy",
  "rollback",
  "plan",
  "invoice",
  "kubernetes",
  "weather",
  "tokyo",
  "lunch",
  "budget",
  "review",
  "meeting",
  "release",
  "incident",
  "latency",
  "cache",
  "schema",
];
const agentId = (i) => `agent-${String(i).padStart(6, "0")}`;

let peakRss = 0;
const sample = () => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
};

function seed(home, random) {
  const sentence = () =>
    Array.from({ length: 12 }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ");
  for (let i = 0; i < AGENTS; i++) {
    home.transcripts.appendMany(
      { agentId: agentId(i), sessionId: "s1" },
      Array.from({ length: EVENTS }, () => ({
        type: "message",
        message: { role: "user", content: sentence() },
      })),
    );
    if (i % 500 === 499) progress(`agents-search: seeded ${fmtCount(i + 1)} agents`);
  }
}

/** The same search, every agent read in turn on this thread: its hits, best first per agent. */
function oneByOne(home, query) {
  let hits = 0;
  for (const { agentId: id } of home.listAgents()) {
    hits += home.readAgent(id, (agent) => agent.search.search(query)).length;
  }
  return hits;
}

export async function run() {
  return withTempDir("agents-search", (dir) => {
    const home = openStateHome({ home: join(dir, "home") });
    try {
      progress(`agents-search: seeding ${fmtCount(AGENTS)} agents × ${EVENTS} events`);
      seed(home, prng(7));
      sample();
      const samples = [];
      const alone = [];
      let hits = 0;
      const timed = (into, fn) => {
        const t0 = process.hrtime.bigint();
        const result = fn();
        into.push(Number(process.hrtime.bigint() - t0));
        sample();
        return result;
      };
      for (let round = 0; round < ROUNDS; round++) {
        for (const query of QUERIES) {
          hits += timed(samples, () => home.transcripts.search(query).length);
          timed(alone, () => oneByOne(home, query));
          progress(`agents-search: "${query}" searched`);
        }
      }
      const s = stats(samples);
      const one = stats(alone);
      const pool = home.agentPool;
      const markdown = [
        `## Search across agents (${fmtCount(AGENTS)} agents × ${EVENTS} events, cap ${pool.maxOpenAgents})`,
        "",
        `One \`transcripts.search(query)\` without an agentId opens every agent's database, ` +
          `each over a read-only connection closed before the next, spread over the search threads and the caller's thread ` +
          `(${availableParallelism()} cores here), and merges the hits by their rank within each agent (see docs/api.md). ` +
          `"One by one" reads the same agents in turn on the caller's thread alone, in the same rounds. ` +
          `Peak RSS ${fmtBytes(peakRss)} (search threads included); ${fmtCount(hits)} hits returned in all.`,
        "",
        table(
          ["", "n", "p50", "p99", "max", "per agent (p50)", "speed-up (p50)"],
          [
            ["search across all agents", s, fmtRatio(one.p50 / s.p50)],
            ["one by one, caller's thread alone", one, ""],
          ].map(([name, st, ratio]) => [
            name,
            fmtCount(st.n),
            fmtUs(st.p50),
            fmtUs(st.p99),
            fmtUs(st.max),
            fmtUs(st.p50 / AGENTS),
            ratio,
          ]),
        ),
      ].join("\n");
      return { name: "agents-search", markdown, targets: [] };
    } finally {
      home.close();
    }
  });
}

await runIfMain(import.meta.url, run);
