// Transcript tail: TranscriptStore.tail(sessionId, 50) on random sessions of 200 events, as the
// database grows to 1,000 sessions, against the bare SELECT + JSON.parse and the legacy reader
// (read the session's .jsonl file, split lines, parse the last 50).
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openStateHome } from "../dist/index.js";
import { eventFactory, makeUuid, makeVocabulary } from "./fixtures.mjs";
import {
  compare,
  fmtBytes,
  fmtCount,
  fmtRatio,
  fmtSpeedup,
  fmtUs,
  met,
  openBareDb,
  prng,
  progress,
  QUICK,
  runIfMain,
  sampleWal,
  table,
  timeOnce,
  walPhase,
  walPhaseTable,
  walTargets,
  watchWal,
  withTempDir,
} from "./lib.mjs";

const SESSION_LENGTH = 200;
const TAIL = 50;
/** Sessions in the database at each measurement point; the last is the target configuration. */
const CHECKPOINTS = QUICK ? [1, 10, 50] : [1, 50, 500, 1_000];
/** tail's p50 and p99 each at most this many times the bare floor's, in the same run. */
const TARGET_RATIO = 1.5;
const CHILD = fileURLToPath(new URL("./append-child.mjs", import.meta.url));
const STORE_RUNS = QUICK
  ? { warmup: 100, iterations: 300, rounds: 2 }
  : { warmup: 500, iterations: 1_000, rounds: 5 };
const LEGACY_RUNS = QUICK
  ? { warmup: 20, iterations: 100, rounds: 2 }
  : { warmup: 50, iterations: 300, rounds: 5 };

/** Appends whole sessions (two appendMany batches of 100 each) and writes their legacy files. */
function grow(agent, next, sessions, dir, rand, upTo) {
  while (sessions.length < upTo) {
    const sessionId = makeUuid(rand);
    for (let done = 0; done < SESSION_LENGTH; done += 100) {
      agent.transcripts.appendMany(sessionId, Array.from({ length: 100 }, next));
      sampleWal();
    }
    // The legacy file holds exactly what the legacy writer would have written.
    const lines = [...agent.transcripts.exportJsonl(sessionId)].join("");
    writeFileSync(join(dir, `${sessionId}.jsonl`), lines);
    sessions.push(sessionId);
  }
}

/**
 * Starts a process appending continuously to another session of the same agent; resolves once
 * it has appended. `stop()` ends it and resolves with how many events it appended.
 */
async function startAppender(homeDir) {
  const child = spawn(process.execPath, [CHILD, homeDir, "bench", "concurrent-writer"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.setEncoding("utf8");
  await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`appender exited early (${code})`)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      if (out.includes("ready\n")) resolve();
    });
  });
  child.removeAllListeners("exit");
  const started = Date.now();
  return {
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => {
          const count = Number(out.split("\n").at(-2));
          resolve({ count, seconds: (Date.now() - started) / 1000 });
        });
        child.kill("SIGTERM");
      }),
  };
}

function legacyTail(file, { all = false } = {}) {
  const lines = readFileSync(file, "utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const parsed = (all ? lines : lines.slice(-TAIL)).map((line) => JSON.parse(line));
  return all ? parsed.slice(-TAIL) : parsed;
}

export async function run() {
  return withTempDir("tail", async (dir) => {
    const vocab = makeVocabulary();
    const next = eventFactory(vocab, 21);
    const rand = prng(5);
    const home = openStateHome({ home: join(dir, "home") });
    const agent = home.agent("bench");
    watchWal(agent.db.path);
    const floorDb = openBareDb(agent.db.path, { readonly: true });
    // The store's own query, bare: the event table keyed by session number, newest first.
    const select = floorDb.prepare(
      `SELECT * FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?)
       ORDER BY seq DESC LIMIT ?`,
    );
    const sessions = [];
    const results = [];
    let seedMs = 0;
    for (const upTo of CHECKPOINTS) {
      progress(`tail: seeding up to ${fmtCount(upTo)} sessions × ${SESSION_LENGTH} events`);
      seedMs += timeOnce(() => grow(agent, next, sessions, dir, rand, upTo)).ms;
      walPhase(`seeding to ${fmtCount(upTo * SESSION_LENGTH)} events (appendMany)`);
      progress(`tail: measuring at ${fmtCount(upTo * SESSION_LENGTH)} events`);
      const pickRand = prng(upTo);
      const pick = () => sessions[Math.floor(pickRand() * sessions.length)];
      const result = compare({
        store: { ...STORE_RUNS, fn: () => agent.transcripts.tail(pick(), TAIL) },
        floor: {
          ...STORE_RUNS,
          fn: () => select.all(pick(), TAIL).map((row) => JSON.parse(row.event_json)),
        },
        legacy: { ...LEGACY_RUNS, fn: () => legacyTail(join(dir, `${pick()}.jsonl`)) },
        legacyAll: {
          ...LEGACY_RUNS,
          fn: () => legacyTail(join(dir, `${pick()}.jsonl`), { all: true }),
        },
      });
      results.push({ sessions: upTo, events: upTo * SESSION_LENGTH, ...result });
      walPhase(`tail at ${fmtCount(upTo * SESSION_LENGTH)} events`);
    }
    progress(
      `tail: measuring at ${fmtCount(results.at(-1).events)} events while another process appends`,
    );
    const appender = await startAppender(join(dir, "home"));
    const pickRand = prng(99);
    const pick = () => sessions[Math.floor(pickRand() * sessions.length)];
    // The child is stopped even when the measurement throws: it would append forever.
    let busy;
    let written;
    try {
      busy = compare({
        store: { ...STORE_RUNS, fn: () => agent.transcripts.tail(pick(), TAIL) },
        floor: {
          ...STORE_RUNS,
          fn: () => select.all(pick(), TAIL).map((row) => JSON.parse(row.event_json)),
        },
      });
    } finally {
      written = await appender.stop();
    }
    walPhase("tail while another process appends");
    const dbBytes = agent.db.sizeBytes();
    const fileBytes = readFileSync(join(dir, `${sessions[0]}.jsonl`)).length;
    floorDb.close();
    home.close();

    const last = results.at(-1);
    const within = (m) =>
      m.store.p50 <= TARGET_RATIO * m.floor.p50 && m.store.p99 <= TARGET_RATIO * m.floor.p99;
    const flat = last.store.p50 / results[0].store.p50;
    const rows = results.map((r) => [
      `${fmtCount(r.sessions)} × ${SESSION_LENGTH} = ${fmtCount(r.events)}`,
      `${fmtUs(r.store.p50)} / ${fmtUs(r.store.p99)} / ${fmtUs(r.store.max)}`,
      `${fmtUs(r.floor.p50)} / ${fmtUs(r.floor.p99)}`,
      fmtRatio(r.store.p50 / r.floor.p50),
      `${fmtUs(r.legacy.p50)} / ${fmtUs(r.legacy.p99)}`,
      fmtSpeedup(r.legacy.p50 / r.store.p50),
      fmtUs(r.legacyAll.p50),
      `p50, p99 ≤ ${TARGET_RATIO} × floor`,
      met(within(r)),
    ]);
    const ratios = (m) =>
      `p50 ${fmtUs(m.store.p50)} = ${fmtRatio(m.store.p50 / m.floor.p50)} × floor, ` +
      `p99 ${fmtUs(m.store.p99)} = ${fmtRatio(m.store.p99 / m.floor.p99)} × floor`;
    const at = `${fmtCount(last.events)} events`;
    const targets = [
      {
        name: `tail(${TAIL}) p50 and p99 ≤ ${TARGET_RATIO} × the bare floor at ${at}`,
        value: ratios(last),
        met: within(last),
      },
      {
        name: `tail(${TAIL}) p50 and p99 ≤ ${TARGET_RATIO} × the bare floor at ${at}, another process appending`,
        value: ratios(busy),
        met: within(busy),
      },
      ...walTargets("tail"),
    ];
    const markdown = [
      `## Transcript tail(${TAIL})`,
      "",
      `\`transcripts.tail(sessionId, ${TAIL})\` on a random session; every session has ${SESSION_LENGTH} events`,
      "(seeded with appendMany; seeding is not measured). **Floor** = bare",
      "`SELECT * FROM transcript_events WHERE session_no = (SELECT session_no FROM sessions WHERE",
      "session_id = ?) ORDER BY seq DESC LIMIT 50` + `JSON.parse` of each row (the store's query), on a",
      "second connection to the same database file. **Legacy** = `readFileSync` of",
      "the session's `.jsonl` (written by `exportJsonl`, so byte-identical to the legacy file), split",
      "lines, `JSON.parse` the last 50: a lower bound, as the legacy reader parses every line to walk",
      "the tree (that cost is shown too; `vs legacy` uses the lower bound). `store ÷ floor` = store",
      "p50 ÷ floor p50 (1.00 = no overhead over the bare query).",
      `Database at the end: ${fmtBytes(dbBytes)}; one session file: ${fmtBytes(fileBytes)};`,
      `seeding took ${(seedMs / 1000).toFixed(1)} s.`,
      "",
      table(
        [
          "sessions × events",
          "store p50 / p99 / max",
          "floor p50 / p99",
          "store ÷ floor",
          "legacy p50 / p99",
          "vs legacy (p50)",
          "legacy, all lines parsed, p50",
          "target",
          "met?",
        ],
        rows,
      ),
      "",
      "",
      `### While another process appends (${at})`,
      "",
      "A child process (bench/append-child.mjs) appends continuously, one event per transaction, to",
      "another session of the same agent while store and floor are measured again, interleaved:",
      `it appended ${fmtCount(written.count)} events in ${written.seconds.toFixed(1)} s.`,
      "",
      table(
        ["", "p50", "p99", "max", "÷ floor p50", "÷ floor p99", "target", "met?"],
        ["store", "floor"].map((name) => [
          name,
          fmtUs(busy[name].p50),
          fmtUs(busy[name].p99),
          fmtUs(busy[name].max),
          fmtRatio(busy[name].p50 / busy.floor.p50),
          fmtRatio(busy[name].p99 / busy.floor.p99),
          name === "store" ? `≤ ${TARGET_RATIO} × floor` : "",
          name === "store" ? met(within(busy)) : "",
        ]),
      ),
      "",
      "The largest -wal of the database (sampled every 256 operations; the other process's writes",
      "included) and the checkpoints the backstop ran on this process's thread, per phase:",
      "",
      walPhaseTable(),
      "",
      `Growth: store p50 at ${fmtCount(last.events)} events = ${fmtRatio(flat)} × its p50 at ` +
        `${fmtCount(results[0].events)} events.`,
    ].join("\n");
    return { name: "tail", markdown, targets };
  });
}

await runIfMain(import.meta.url, run);
