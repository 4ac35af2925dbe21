// Cold storage of one idle 10 MB session (ColdStore): the tail of the cold session (last 50
// events, read from its archive), the append that restores it first, and the move itself against
// gzip of the same bytes alone (the floor: a move also reads the rows, writes and fsyncs the file,
// reads it back to verify, copies the index rows to the cold index file, and in one transaction
// claims them and deletes the hot rows). bench/cold-scale.mjs moves ~1 GB of idle sessions and measures the space after.

import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { openStateHome } from "../dist/index.js";
import { eventFactory, makeUuid, makeVocabulary } from "./fixtures.mjs";
import {
  fmtBytes,
  fmtCount,
  fmtRatio,
  fmtUs,
  median,
  met,
  prng,
  progress,
  QUICK,
  runIfMain,
  stats,
  table,
  timeOnce,
  withTempDir,
} from "./lib.mjs";

const SESSION_BYTES = QUICK ? 2 * 1024 * 1024 : 10 * 1024 * 1024;
const TAIL = 50;
const TAIL_RUNS = QUICK ? 20 : 100;
const ROUNDS = QUICK ? 2 : 5;
const TARGETS = { tailMs: 50, restoreMs: 200, moveVsGzip: 0.4 };

/** Appends events until the session's stored JSON reaches SESSION_BYTES; returns those bytes. */
function fill(agent, sessionId) {
  const next = eventFactory(makeVocabulary(), 5);
  let bytes = 0;
  while (bytes < SESSION_BYTES) {
    const results = agent.transcripts.appendMany(sessionId, Array.from({ length: 500 }, next));
    for (const r of results) bytes += JSON.stringify(r.event).length;
  }
  agent.transcripts.index.indexPending();
  return agent.db
    .prepare(
      `SELECT group_concat(event_json, char(10)) AS text FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?)`,
    )
    .get(sessionId).text;
}

function measureTail(agent, sessionId) {
  const samples = [];
  for (let i = 0; i < TAIL_RUNS; i++) {
    const t0 = process.hrtime.bigint();
    const events = agent.transcripts.tail(sessionId, TAIL);
    samples.push(Number(process.hrtime.bigint() - t0));
    if (events.length !== TAIL) throw new Error(`tail returned ${events.length} events`);
  }
  return stats(samples);
}

export async function run() {
  return withTempDir("cold", async (dir) => {
    const home = openStateHome({ home: join(dir, "home") });
    const agent = home.agent("bench");
    const rand = prng(3);
    const sessions = Array.from({ length: ROUNDS }, () => makeUuid(rand));
    const texts = [];
    for (const [i, sessionId] of sessions.entries()) {
      progress(`cold: filling ${fmtBytes(SESSION_BYTES)} session ${i + 1}/${ROUNDS}`);
      texts.push(fill(agent, sessionId));
    }
    const events = agent.branches.session(sessions[0]).eventCount;
    const text = texts[0];
    // Each move is paired with a gzip of the same session's bytes just before it: on a shared
    // machine the load changes from one second to the next, and a ratio of neighbours holds.
    const gzips = [];
    const firstMoves = [];
    const ratios = [];
    const restores = [];
    const moveAgain = [];
    let archiveBytes = 0;
    for (const [i, sessionId] of sessions.entries()) {
      gzips.push(timeOnce(() => gzipSync(texts[i])).ms);
      const moved = timeOnce(() => agent.cold.move(sessionId));
      firstMoves.push(moved.ms);
      ratios.push(gzips.at(-1) / moved.ms);
      archiveBytes = moved.value.bytes;
    }
    progress("cold: tail, restore, move again");
    const tail = measureTail(agent, sessions[0]);
    for (const [round, sessionId] of sessions.entries()) {
      const append = { type: "custom", customType: "bench", data: round };
      restores.push(timeOnce(() => agent.transcripts.append(sessionId, append)).ms);
      moveAgain.push(timeOnce(() => agent.cold.move(sessionId)).ms);
    }
    home.close();
    const moveMs = median(firstMoves);
    const restoreMs = median(restores);
    const gzipMs = median(gzips);
    const ratio = median(ratios);
    const targets = [
      {
        name: `tail of a cold ${fmtBytes(text.length)} session (last ${TAIL} events) p50 ≤ ${TARGETS.tailMs} ms`,
        value: fmtUs(tail.p50),
        met: tail.p50 / 1000 <= TARGETS.tailMs,
      },
      {
        name: `append to it (restore first) ≤ ${TARGETS.restoreMs} ms`,
        value: `${restoreMs.toFixed(0)} ms`,
        met: restoreMs <= TARGETS.restoreMs,
      },
      {
        name: `first move's throughput ≥ ${TARGETS.moveVsGzip * 100}% of gzip of the same bytes alone`,
        value: `${(ratio * 100).toFixed(0)}%`,
        met: ratio >= TARGETS.moveVsGzip,
      },
    ];
    const markdown = [
      `${ROUNDS} sessions of ${fmtCount(events)} events, ${fmtBytes(text.length)} of stored JSON each; archive ${fmtBytes(archiveBytes)} (${fmtRatio(text.length / archiveBytes)}× smaller). Medians over the sessions.`,
      "",
      table(
        ["operation", "time"],
        [
          ["gzip of the stored JSON alone (level 6)", `${gzipMs.toFixed(0)} ms`],
          [
            "first move (read, encode, write + fsync, verify, copy index rows, delete)",
            `${moveMs.toFixed(0)} ms`,
          ],
          ["append to the cold session (restore + append)", `${restoreMs.toFixed(0)} ms`],
          [
            "move again after that append (index rows already cold)",
            `${median(moveAgain).toFixed(0)} ms`,
          ],
          [
            `tail ${TAIL} of the cold session, p50 / p99`,
            `${fmtUs(tail.p50)} / ${fmtUs(tail.p99)}`,
          ],
        ],
      ),
      "",
      ...targets.map((t) => `- ${t.name}: ${t.value} ${met(t.met)}`),
    ].join("\n");
    return { name: "cold", markdown, targets };
  });
}

await runIfMain(import.meta.url, run);
