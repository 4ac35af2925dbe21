// agentstate/pi: AgentStateSessionManager against pi's own SessionManager in file mode (one
// appendFileSync per entry, no fsync), same run, same messages: appendMessage p50/p99 into one
// session, open of 1,000- and 10,000-entry sessions, list/listAll over 1,000 sessions.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { openStateHome } from "../dist/index.js";
import { AgentStateSessionManager } from "../dist/pi/index.js";
import {
  fmtCount,
  fmtRatio,
  fmtSpeedup,
  fmtUs,
  median,
  progress,
  QUICK,
  runIfMain,
  stats,
  table,
  timeOnce,
  withTempDir,
} from "./lib.mjs";

const APPENDS = QUICK ? 1_000 : 10_000;
const OPEN_SIZES = QUICK ? [100, 1_000] : [1_000, 10_000];
const LIST_SESSIONS = QUICK ? 100 : 1_000;
const LIST_MESSAGES = 20;
const ROUNDS = QUICK ? 3 : 5;
const TARGET_LIST_SPEEDUP = 20;
const CWD = "/home/user/project";

const TEXT = "Please water the basil on the balcony and check the soil of the mint. ".repeat(3);
const user = (i) => ({ role: "user", content: `${i}: ${TEXT}`, timestamp: 1_767_000_000_000 + i });
const assistant = (i) => ({
  role: "assistant",
  content: [{ type: "text", text: `${i}: done. ${TEXT}` }],
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet",
  usage: { input: 10, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 30 },
  stopReason: "stop",
  timestamp: 1_767_000_000_000 + i,
});
const messageAt = (i) => (i % 2 === 0 ? user(i) : assistant(i));

/** Per-call times (ns) of `count` appendMessage calls, after an assistant message flushed pi. */
function appendSamples(manager, count) {
  manager.appendMessage(assistant(-1));
  const samples = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const message = messageAt(i);
    const t0 = process.hrtime.bigint();
    manager.appendMessage(message);
    samples[i] = Number(process.hrtime.bigint() - t0);
  }
  return stats(samples);
}

function fill(manager, count) {
  for (let i = 0; i < count; i++) manager.appendMessage(messageAt(i));
  return manager;
}

function medianMs(fn) {
  return median(Array.from({ length: ROUNDS }, () => timeOnce(fn).ms));
}

function measureAppend(dir, agent) {
  progress(`pi: ${fmtCount(APPENDS)} appendMessage calls, each mode`);
  const file = appendSamples(SessionManager.create(CWD, join(dir, "append")), APPENDS);
  const adapter = appendSamples(AgentStateSessionManager.create(agent, CWD), APPENDS);
  return { file, adapter };
}

function measureOpen(dir, agent) {
  return OPEN_SIZES.map((size) => {
    progress(`pi: open of a ${fmtCount(size)}-entry session`);
    const pi = fill(SessionManager.create(CWD, join(dir, `open-${size}`)), size);
    const stored = fill(AgentStateSessionManager.create(agent, CWD), size);
    const path = pi.getSessionFile();
    const id = stored.getSessionId();
    return {
      size,
      file: medianMs(() => SessionManager.open(path)),
      adapter: medianMs(() => AgentStateSessionManager.open(agent, id)),
    };
  });
}

/** The same sessions both ways: stored by the adapter, exported into pi's session layout. */
async function measureList(dir, home) {
  progress(`pi: ${fmtCount(LIST_SESSIONS)} sessions × ${LIST_MESSAGES} messages`);
  const agent = home.agent("list");
  const piRoot = join(dir, "pi-agent");
  const sessionDir = join(piRoot, "sessions", "--home-user-project--");
  mkdirSync(sessionDir, { recursive: true });
  for (let s = 0; s < LIST_SESSIONS; s++) {
    const manager = fill(AgentStateSessionManager.create(agent, CWD), LIST_MESSAGES);
    const id = manager.getSessionId();
    const stamp = manager.getHeader().timestamp.replace(/[:.]/g, "-");
    writeFileSync(
      join(sessionDir, `${stamp}_${id}.jsonl`),
      [...agent.transcripts.exportJsonl(id)].join(""),
    );
  }
  process.env.PI_CODING_AGENT_DIR = piRoot;
  const time = async (fn) => {
    const runs = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now();
      const listed = await fn();
      runs.push(performance.now() - t0);
      if (listed.length !== LIST_SESSIONS) throw new Error(`listed ${listed.length} sessions`);
    }
    return median(runs);
  };
  return {
    list: {
      file: await time(() => SessionManager.list(CWD, sessionDir)),
      adapter: await time(() => AgentStateSessionManager.list(agent, CWD)),
    },
    listAll: {
      file: await time(() => SessionManager.listAll()),
      adapter: await time(() => AgentStateSessionManager.listAll(agent)),
    },
  };
}

function markdown(append, opens, lists) {
  const appendRows = [
    [
      "pi file mode (appendFileSync, no fsync)",
      fmtUs(append.file.p50),
      fmtUs(append.file.p99),
      "1.00",
    ],
    [
      "AgentStateSessionManager (WAL, synchronous=NORMAL)",
      fmtUs(append.adapter.p50),
      fmtUs(append.adapter.p99),
      fmtRatio(append.adapter.p50 / append.file.p50),
    ],
  ];
  const openRows = opens.map((o) => [
    `open, ${fmtCount(o.size)} entries`,
    `${o.file.toFixed(2)} ms`,
    `${o.adapter.toFixed(2)} ms`,
    fmtSpeedup(o.file / o.adapter),
  ]);
  const listRows = Object.entries(lists).map(([name, r]) => [
    `${name}, ${fmtCount(LIST_SESSIONS)} sessions`,
    `${r.file.toFixed(1)} ms`,
    `${r.adapter.toFixed(2)} ms`,
    fmtSpeedup(r.file / r.adapter),
  ]);
  return [
    "## pi SessionManager (agentstate/pi)",
    "",
    `appendMessage into one session, ${fmtCount(APPENDS)} calls (ratio: p50 against file mode's):`,
    "",
    table(["mode", "p50", "p99", "p50 ratio"], appendRows),
    "",
    table(["operation", "pi file mode", "agentstate", "agentstate is"], [...openRows, ...listRows]),
    "",
    `list and listAll: pi reads and parses every file; the adapter reads one summary row per session (target ≥ ${TARGET_LIST_SPEEDUP}×).`,
  ].join("\n");
}

export async function run() {
  return withTempDir("pi", async (dir) => {
    const home = openStateHome({ home: join(dir, "home") });
    const agent = home.agent("bench");
    const append = measureAppend(dir, agent);
    const opens = measureOpen(dir, agent);
    const lists = await measureList(dir, home);
    home.close();
    const speedup = Math.min(
      lists.list.file / lists.list.adapter,
      lists.listAll.file / lists.listAll.adapter,
    );
    return {
      name: "pi",
      markdown: markdown(append, opens, lists),
      targets: [
        {
          name: `pi list/listAll over ${fmtCount(LIST_SESSIONS)} sessions ≥ ${TARGET_LIST_SPEEDUP}× file mode`,
          value: `${fmtRatio(speedup)}×`,
          met: speedup >= TARGET_LIST_SPEEDUP,
        },
      ],
    };
  });
}

await runIfMain(import.meta.url, run);
