// Cold storage at scale, in one agent database: idle transcripts (BENCH_COLD_IDLE_MB, 1024 by
// default, 64 with BENCH_QUICK=1) in sessions of 4 MB, plus one hot session for every nine idle
// ones. Every idle session is moved cold, each move timed against a gzip (level 6) of the same
// session's stored JSON just before it, so both rates come from the same minutes of this run.
// Then the maintenance an operator runs (`agentstate gc --vacuum`, the built CLI) and the hot
// database's size (file + WAL) against the same rows packed (the floor: every row the database
// must still hold, copied by `VACUUM INTO` with each full-text index optimized to one segment: no
// free page, no page left half empty by deletes, no posting of a deleted row); and against a fresh
// home holding only the hot sessions. The cold sessions' search index is in its own file
// (cold/index.sqlite), reported beside the archives.

import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import { openStateHome } from "../dist/index.js";
import { eventFactory, makeUuid, makeVocabulary } from "./fixtures.mjs";
import {
  fmtBytes,
  fmtCount,
  fmtRatio,
  met,
  openBareDb,
  prng,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const MB = 1024 * 1024;
const IDLE_BYTES = Number(process.env.BENCH_COLD_IDLE_MB ?? (QUICK ? 64 : 1024)) * MB;
const SESSION_BYTES = 4 * MB;
const IDLE_SESSIONS = Math.max(1, Math.round(IDLE_BYTES / SESSION_BYTES));
const HOT_SESSIONS = Math.max(1, Math.round(IDLE_SESSIONS / 9));
const TARGETS = { moveVsGzip: 0.4, hotOverFloor: 1.25 };
const CLI = new URL("../dist/cli/main.js", import.meta.url).pathname;

/** Appends events until the session's stored JSON reaches SESSION_BYTES. */
function fill(agent, sessionId, next) {
  let bytes = 0;
  while (bytes < SESSION_BYTES) {
    const results = agent.transcripts.appendMany(sessionId, Array.from({ length: 500 }, next));
    for (const r of results) bytes += JSON.stringify(r.event).length;
  }
}

function fillHome(homeDir, sessions, next, label) {
  const home = openStateHome({ home: homeDir });
  const agent = home.agent("bench");
  for (const [i, sessionId] of sessions.entries()) {
    if (i % 10 === 0) progress(`cold-scale: ${label} session ${i + 1}/${sessions.length}`);
    fill(agent, sessionId, next);
  }
  agent.transcripts.index.indexPending();
  return { home, agent };
}

/** CPU time of this process: on a shared machine it swings less than the clock. */
function cpuMs() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Moves every session, each paired with a gzip of its bytes; sums of both and of the bytes. */
function moveAll(agent, sessions) {
  const text = agent.db.prepare(
    `SELECT group_concat(event_json, char(10)) AS text FROM transcript_events
     WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?)`,
  );
  const sum = { bytes: 0, gzipMs: 0, moveMs: 0, gzipCpuMs: 0, moveCpuMs: 0, archiveBytes: 0 };
  for (const [i, sessionId] of sessions.entries()) {
    if (i % 10 === 0) progress(`cold-scale: moving ${i + 1}/${sessions.length}`);
    const bytes = Buffer.from(text.get(sessionId).text);
    let [t0, c0] = [performance.now(), cpuMs()];
    gzipSync(bytes);
    sum.gzipMs += performance.now() - t0;
    sum.gzipCpuMs += cpuMs() - c0;
    [t0, c0] = [performance.now(), cpuMs()];
    const moved = agent.cold.move(sessionId);
    sum.moveMs += performance.now() - t0;
    sum.moveCpuMs += cpuMs() - c0;
    sum.bytes += bytes.length;
    sum.archiveBytes += moved.bytes;
  }
  return sum;
}

function dbBytes(path) {
  const size = (p) => {
    try {
      return statSync(p).size;
    } catch {
      return 0;
    }
  };
  return size(path) + size(`${path}-wal`);
}

function gcVacuum(homeDir) {
  const run = spawnSync(process.execPath, [CLI, "gc", "--vacuum", "--home", homeDir], {
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`gc --vacuum failed: ${run.stderr}`);
}

/**
 * The floor: the same rows in a new file (`VACUUM INTO`), each full-text index then rewritten as
 * one segment (`'optimize'`) and the file packed again: what the rows need at the least.
 */
function packedBytes(dbPath, out) {
  const db = openBareDb(dbPath, { readonly: true });
  db.exec(`VACUUM INTO '${out}'`);
  db.close();
  const copy = openBareDb(out);
  const fts = copy
    .prepare("SELECT name FROM sqlite_schema WHERE sql LIKE 'CREATE VIRTUAL TABLE % USING fts5%'")
    .all();
  for (const { name } of fts) copy.exec(`INSERT INTO ${name} (${name}) VALUES ('optimize')`);
  copy.exec("PRAGMA journal_mode = DELETE");
  copy.exec("VACUUM");
  copy.close();
  return statSync(out).size;
}

/** Bytes of the largest tables (an FTS5 table with its shadow tables, an index with its table). */
function largestTables(dbPath) {
  const db = openBareDb(dbPath, { readonly: true });
  const rows = db
    .prepare(
      `SELECT CASE WHEN d.name GLOB '*_fts_*' THEN substr(d.name, 1, instr(d.name, '_fts_') + 3)
           ELSE coalesce(t.tbl_name, d.name) END AS name, sum(d.pgsize) AS bytes
       FROM dbstat d LEFT JOIN sqlite_schema t ON t.name = d.name
       GROUP BY 1 ORDER BY bytes DESC LIMIT 4`,
    )
    .all();
  db.close();
  return rows;
}

export async function run() {
  return withTempDir("cold-scale", async (dir) => {
    const rand = prng(5);
    const idle = Array.from({ length: IDLE_SESSIONS }, () => makeUuid(rand));
    const hot = Array.from({ length: HOT_SESSIONS }, () => makeUuid(rand));
    // Hot and idle sessions interleaved, as in a home that has run for a while.
    const all = idle.flatMap((id, i) => (i % 9 === 0 && hot[i / 9] ? [hot[i / 9], id] : [id]));
    const homeDir = join(dir, "home");
    const { home, agent } = fillHome(homeDir, all, eventFactory(makeVocabulary(), 5), "filling");
    const dbPath = agent.db.path;
    const moved = moveAll(agent, idle);
    home.close();
    progress("cold-scale: gc --vacuum");
    const beforeGc = dbBytes(dbPath);
    gcVacuum(homeDir);
    const hotBytes = dbBytes(dbPath);
    const floor = packedBytes(dbPath, join(dir, "packed.sqlite"));
    const largest = largestTables(dbPath);
    progress("cold-scale: a fresh home of the hot sessions alone");
    const freshDir = join(dir, "fresh");
    const fresh = fillHome(freshDir, hot, eventFactory(makeVocabulary(), 5), "fresh");
    fresh.home.close();
    gcVacuum(freshDir);
    const freshBytes = dbBytes(join(freshDir, "agents", "bench", "agent", "agent.sqlite"));
    const coldIndexBytes = statSync(join(dirname(dbPath), "cold", "index.sqlite")).size;
    return report({ moved, beforeGc, hotBytes, floor, largest, freshBytes, coldIndexBytes });
  });
}

function report({ moved, beforeGc, hotBytes, floor, largest, freshBytes, coldIndexBytes }) {
  const rate = (ms) => `${(moved.bytes / MB / (ms / 1000)).toFixed(1)} MB/s`;
  const ratio = moved.gzipMs / moved.moveMs;
  const cpuRatio = moved.gzipCpuMs / moved.moveCpuMs;
  const overFloor = hotBytes / floor;
  const overHotAlone = hotBytes / freshBytes;
  const targets = [
    {
      name: `moving ${fmtBytes(moved.bytes)} of idle transcripts: ≥ ${TARGETS.moveVsGzip * 100}% of gzip's rate on the same bytes`,
      value: `${(ratio * 100).toFixed(0)}%`,
      met: ratio >= TARGETS.moveVsGzip,
    },
    {
      name: `hot database after gc --vacuum ≤ ${TARGETS.hotOverFloor}× its rows packed`,
      value: `${fmtRatio(overFloor)}×`,
      met: overFloor <= TARGETS.hotOverFloor,
    },
    {
      name: `… and ≤ ${TARGETS.hotOverFloor}× a fresh home of the hot sessions alone`,
      value: `${fmtRatio(overHotAlone)}×`,
      met: overHotAlone <= TARGETS.hotOverFloor,
    },
  ];
  const markdown = [
    `${fmtCount(IDLE_SESSIONS)} idle sessions of ${fmtBytes(SESSION_BYTES)} moved cold, ${fmtCount(HOT_SESSIONS)} hot ones left (\`BENCH_COLD_IDLE_MB\`=${IDLE_BYTES / MB}); archives ${fmtBytes(moved.archiveBytes)} (${fmtRatio(moved.bytes / moved.archiveBytes)}× smaller).`,
    "",
    table(
      ["measure", "value"],
      [
        ["gzip (level 6) of each session's stored JSON alone", rate(moved.gzipMs)],
        ["moving them cold", rate(moved.moveMs)],
        [
          "the same two by CPU time (gzip, move)",
          `${rate(moved.gzipCpuMs)}, ${rate(moved.moveCpuMs)} (${(cpuRatio * 100).toFixed(0)}%)`,
        ],
        ["agent database + WAL after the moves, before gc", fmtBytes(beforeGc)],
        ["after `gc --vacuum`", fmtBytes(hotBytes)],
        ["the same rows packed (VACUUM INTO, full-text indexes optimized)", fmtBytes(floor)],
        ...largest.map((t) => [`of which ${t.name}`, fmtBytes(t.bytes)]),
        ["a fresh home of the hot sessions alone", fmtBytes(freshBytes)],
        [
          "the cold sessions' search index (cold/index.sqlite, after gc --vacuum)",
          fmtBytes(coldIndexBytes),
        ],
        [
          "cold bytes (archives + that index) against the bytes moved",
          `${fmtBytes(moved.archiveBytes + coldIndexBytes)} (${(((moved.archiveBytes + coldIndexBytes) / moved.bytes) * 100).toFixed(0)}%)`,
        ],
      ],
    ),
    "",
    ...targets.map((t) => `- ${t.name}: ${t.value} ${met(t.met)}`),
  ].join("\n");
  return { name: "cold-scale", markdown, targets };
}

await runIfMain(import.meta.url, run);
