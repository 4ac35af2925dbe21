// What checkpoints cost the writer, and how large the WAL grows: 100,000 single-row appends to a
// bare table (BENCH_WAL_N to change), with (a) SQLite's auto-checkpoint, run inside whichever
// commit crosses 1000 pages, and (b) agentstate's background checkpointer thread. Per append:
// p50, p99, p99.9, max, mean; the largest -wal file seen; and the checkpoints run on the
// caller's thread. In (a) a commit ran one when the WAL index's backfill count rose across it
// (nBackfill, at byte 96 of the -shm file); in (b) auto-checkpoint is off, and the only caller-side
// checkpoint is the backstop, which counts itself (`callerCatchUps`).
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../dist/db/database.js";
import { callerCatchUps } from "../dist/db/wal-signal.js";
import {
  fmtBytes,
  fmtCount,
  fmtUs,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const N = Number(process.env.BENCH_WAL_N ?? (QUICK ? 5000 : 100_000));
const LIMIT = 64 * 1024 * 1024;
const BODY = "x".repeat(200);

/** Nearest-rank percentiles (µs) of samples in ns. */
function percentiles(samplesNs) {
  const sorted = Float64Array.from(samplesNs).sort();
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] / 1e3;
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    p50: at(0.5),
    p99: at(0.99),
    p999: at(0.999),
    max: at(1),
    mean: sum / sorted.length / 1e3,
  };
}

/** The WAL index's count of frames already copied back into the database. */
function backfilled(fd, buffer) {
  readSync(fd, buffer, 0, 4, 96);
  return buffer.readUInt32LE(0);
}

function appendAll(path, checkpoints) {
  const db = openDatabase({ path, role: "agent", checkpoints });
  db.exec("CREATE TABLE appended (id INTEGER PRIMARY KEY, body TEXT)");
  const insert = db.prepare("INSERT INTO appended (body) VALUES (?)");
  db.tx(() => insert.run(BODY));
  const shm = openSync(`${path}-shm`, "r");
  const word = Buffer.alloc(4);
  const samples = new Float64Array(N);
  const inline = { count: 0, longestNs: 0 };
  const caughtUpBefore = { ...callerCatchUps };
  let largestWal = 0;
  for (let i = 0; i < N; i++) {
    const before = checkpoints === "inline" ? backfilled(shm, word) : 0;
    const started = process.hrtime.bigint();
    db.tx(() => insert.run(BODY));
    const ns = Number(process.hrtime.bigint() - started);
    samples[i] = ns;
    if (checkpoints === "inline" && backfilled(shm, word) > before) {
      inline.count++;
      inline.longestNs = Math.max(inline.longestNs, ns);
    }
    if (i % 100 === 0) largestWal = Math.max(largestWal, statSync(`${path}-wal`).size);
  }
  const mode = db.checkpoints;
  const autocheckpoint = db.pragma("wal_autocheckpoint");
  closeSync(shm);
  db.close();
  const backstop = {
    count: callerCatchUps.count - caughtUpBefore.count,
    longestNs: callerCatchUps.longestMs * 1e6,
  };
  const caller = checkpoints === "inline" ? inline : backstop;
  return { mode, autocheckpoint, stats: percentiles(samples), largestWal, caller };
}

export async function run() {
  const results = {};
  for (const checkpoints of ["inline", "background"]) {
    progress(`wal: ${fmtCount(N)} appends, ${checkpoints} checkpoints`);
    results[checkpoints] = await withTempDir(`wal-${checkpoints}`, (dir) =>
      appendAll(join(dir, "appended.sqlite"), checkpoints),
    );
  }
  const label = {
    inline: "(a) SQLite auto-checkpoint (inline)",
    background: "(b) background checkpointer",
  };
  const rows = Object.entries(results).map(([name, r]) => [
    `${label[name]}${r.mode === name ? "" : ` (ran as ${r.mode})`}`,
    fmtUs(r.stats.p50),
    fmtUs(r.stats.p99),
    fmtUs(r.stats.p999),
    fmtUs(r.stats.max),
    fmtUs(r.stats.mean),
    fmtBytes(r.largestWal),
    `${r.caller.count} (longest ${fmtUs(r.caller.longestNs / 1e3)})`,
  ]);
  const b = results.background;
  const markdown = [
    "## WAL checkpoints",
    "",
    `${fmtCount(N)} single-row appends (\`db.tx\`, ${BODY.length}-byte text) to a bare table, one`,
    "writer in a tight loop. Largest -wal: sampled every 100 appends. Caller-thread checkpoints:",
    "commits that ran SQLite's auto-checkpoint in (a); the backstop (a WAL past 40 MiB) in (b),",
    `where \`wal_autocheckpoint\` was ${b.autocheckpoint}.`,
    "",
    table(
      [
        "checkpoints",
        "p50",
        "p99",
        "p99.9",
        "max",
        "mean",
        "largest -wal",
        "caller-thread checkpoints",
      ],
      rows,
    ),
  ].join("\n");
  return {
    name: "wal",
    markdown,
    targets: [
      {
        name: "background: largest -wal < 64 MiB",
        value: fmtBytes(b.largestWal),
        met: b.largestWal < LIMIT,
      },
      {
        name: "background: no checkpoint on the caller's thread",
        value: String(b.caller.count),
        met: b.caller.count === 0,
      },
    ],
  };
}

await runIfMain(import.meta.url, run);
