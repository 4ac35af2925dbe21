// Transcript tail: TranscriptStore.tail(sessionId, 50) on random sessions of 200 events, as the
// database grows to 1,000 sessions, against the bare SELECT + JSON.parse and the legacy reader
// (read the session's .jsonl file, split lines, parse the last 50).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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
  table,
  timeOnce,
  withTempDir,
} from "./lib.mjs";

const SESSION_LENGTH = 200;
const TAIL = 50;
/** Sessions in the database at each measurement point; the last is the target configuration. */
const CHECKPOINTS = QUICK ? [1, 10, 50] : [1, 50, 500, 1_000];
const TARGET_P50_US = 1000;
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
    }
    // The legacy file holds exactly what the legacy writer would have written.
    const lines = [...agent.transcripts.exportJsonl(sessionId)].join("");
    writeFileSync(join(dir, `${sessionId}.jsonl`), lines);
    sessions.push(sessionId);
  }
}

function legacyTail(file, { all = false } = {}) {
  const lines = readFileSync(file, "utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const parsed = (all ? lines : lines.slice(-TAIL)).map((line) => JSON.parse(line));
  return all ? parsed.slice(-TAIL) : parsed;
}

export async function run() {
  return withTempDir("tail", (dir) => {
    const vocab = makeVocabulary();
    const next = eventFactory(vocab, 21);
    const rand = prng(5);
    const home = openStateHome({ home: join(dir, "home") });
    const agent = home.agent("bench");
    const floorDb = openBareDb(agent.db.path, { readonly: true });
    const select = floorDb.prepare(
      "SELECT * FROM transcript_events WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
    );
    const sessions = [];
    const results = [];
    let seedMs = 0;
    for (const upTo of CHECKPOINTS) {
      progress(`tail: seeding up to ${fmtCount(upTo)} sessions × ${SESSION_LENGTH} events`);
      seedMs += timeOnce(() => grow(agent, next, sessions, dir, rand, upTo)).ms;
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
    }
    const dbBytes = agent.db.sizeBytes();
    const fileBytes = readFileSync(join(dir, `${sessions[0]}.jsonl`)).length;
    floorDb.close();
    home.close();

    const last = results.at(-1);
    const flat = last.store.p50 / results[0].store.p50;
    const rows = results.map((r) => [
      `${fmtCount(r.sessions)} × ${SESSION_LENGTH} = ${fmtCount(r.events)}`,
      `${fmtUs(r.store.p50)} / ${fmtUs(r.store.p99)} / ${fmtUs(r.store.max)}`,
      `${fmtUs(r.floor.p50)} / ${fmtUs(r.floor.p99)}`,
      fmtRatio(r.store.p50 / r.floor.p50),
      `${fmtUs(r.legacy.p50)} / ${fmtUs(r.legacy.p99)}`,
      fmtSpeedup(r.legacy.p50 / r.store.p50),
      fmtUs(r.legacyAll.p50),
      "p50 < 1 ms",
      met(r.store.p50 < TARGET_P50_US),
    ]);
    const targets = [
      {
        name: `tail(${TAIL}) p50 < 1 ms at ${fmtCount(last.sessions)} sessions × ${SESSION_LENGTH} events`,
        value: `p50 ${fmtUs(last.store.p50)}, p99 ${fmtUs(last.store.p99)}`,
        met: last.store.p50 < TARGET_P50_US,
      },
    ];
    const markdown = [
      `## Transcript tail(${TAIL})`,
      "",
      `\`transcripts.tail(sessionId, ${TAIL})\` on a random session; every session has ${SESSION_LENGTH} events`,
      "(seeded with appendMany; seeding is not measured). **Floor** = bare",
      "`SELECT * FROM transcript_events WHERE session_id = ? ORDER BY seq DESC LIMIT 50` + `JSON.parse`",
      "of each row, on a second connection to the same database file. **Legacy** = `readFileSync` of",
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
      `Growth: store p50 at ${fmtCount(last.events)} events = ${fmtRatio(flat)} × its p50 at ` +
        `${fmtCount(results[0].events)} events.`,
    ].join("\n");
    return { name: "tail", markdown, targets };
  });
}

await runIfMain(import.meta.url, run);
