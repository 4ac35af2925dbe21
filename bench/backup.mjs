// Backup throughput: `createBackup` of a home whose agent database is ~200 MB, against a bare
// `VACUUM INTO` of that same database in the same run (issue 5: at least 50% of its throughput),
// with and without gzip. Rounds are interleaved (A B C A B C …) so machine noise hits every case.
// Throughput is the agent database's bytes over the wall time, although the backup does more
// (the global database, integrity checks, hashing, the archive, fsync).
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { createBackup } from "../dist/backup/create-backup.js";
import { verifyBackup } from "../dist/backup/verify-backup.js";
import { openStateHome } from "../dist/index.js";
import { eventFactory, makeVocabulary } from "./fixtures.mjs";
import {
  fmtBytes,
  median,
  met,
  openBareDb,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const TARGET_BYTES = QUICK ? 20e6 : 200e6;
const ROUNDS = QUICK ? 1 : 3;
const BATCH = 2000;

function fileBytes(path) {
  return statSync(path).size + (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0);
}

/** A home whose agent "main" holds TARGET_BYTES of realistic transcripts, checkpointed. */
function buildHome(dir) {
  const home = openStateHome({ home: join(dir, "home") });
  const agent = home.agent("main");
  const next = eventFactory(makeVocabulary());
  for (let session = 0; statSync(agent.db.path).size < TARGET_BYTES; session++) {
    const events = Array.from({ length: BATCH }, next);
    home.transcripts.appendMany({ agentId: "main", sessionId: `s${session % 40}` }, events);
    if (session % 20 === 0) progress(`backup: filled ${fmtBytes(fileBytes(agent.db.path))}`);
  }
  agent.db.checkpoint("TRUNCATE");
  return home;
}

async function timeAsync(fn) {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

function makeCases(home, dir) {
  const source = home.agent("main").db.path;
  const out = (name) => join(dir, name);
  return {
    "bare VACUUM INTO": async () => {
      const target = out("vacuum.sqlite");
      const db = openBareDb(source);
      const { ms } = await timeAsync(() => db.exec(`VACUUM INTO '${target}'`));
      db.close();
      const bytes = statSync(target).size;
      rmSync(target);
      return { ms, bytes };
    },
    "backup create (tar)": async () => {
      const { ms, value } = await timeAsync(() =>
        createBackup(home, { out: out("b.tar"), compress: false }),
      );
      rmSync(value.archive);
      return { ms, bytes: value.archiveBytes };
    },
    "backup create (tar.gz)": async () => {
      const name = `b-${Date.now()}.tar.gz`;
      const { ms, value } = await timeAsync(() => createBackup(home, { out: out(name) }));
      return { ms, bytes: value.archiveBytes, archive: value.archive };
    },
  };
}

async function measure(home, dir) {
  const cases = makeCases(home, dir);
  const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  let archive; // the latest tar.gz, kept to time `verify` on at the end
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(cases)) {
      const result = await run();
      if (result.archive) {
        if (archive) rmSync(archive);
        archive = result.archive;
      }
      samples[name].push(result);
      progress(`backup: round ${round + 1}/${ROUNDS} ${name}: ${result.ms.toFixed(0)} ms`);
    }
  }
  const verify = await timeAsync(() => verifyBackup(archive));
  if (!verify.value.ok)
    throw new Error(`bench archive failed verification: ${verify.value.firstProblem}`);
  return { samples, verifyMs: verify.ms };
}

/** The target, per archive kind: at least half a bare VACUUM INTO's throughput. */
function targetsOf(samples) {
  const floor = median(samples["bare VACUUM INTO"].map((s) => s.ms));
  return Object.entries(samples)
    .filter(([name]) => name.startsWith("backup"))
    .map(([name, list]) => {
      const ratio = floor / median(list.map((s) => s.ms));
      return {
        name: `${name} ≥ 50% of a bare VACUUM INTO's throughput`,
        value: `${(ratio * 100).toFixed(0)}%`,
        met: ratio >= 0.5,
      };
    });
}

function render(dbBytes, samples, verifyMs) {
  const mbps = (ms) => dbBytes / 1e6 / (ms / 1000);
  const floor = mbps(median(samples["bare VACUUM INTO"].map((s) => s.ms)));
  const rows = Object.entries(samples).map(([name, list]) => {
    const ms = median(list.map((s) => s.ms));
    const ratio = mbps(ms) / floor;
    const isBackup = name.startsWith("backup");
    return [
      name,
      `${ms.toFixed(0)} ms`,
      mbps(ms).toFixed(0),
      isBackup ? `${(ratio * 100).toFixed(0)}%` : "floor",
      fmtBytes(median(list.map((s) => s.bytes))),
      isBackup ? met(ratio >= 0.5) : "–",
    ];
  });
  const headers = ["case", "median time", "MB/s of agent DB", "vs VACUUM INTO", "output", "≥ 50%"];
  return [
    `### Backup (agent DB ${fmtBytes(dbBytes)}, ${ROUNDS} interleaved rounds, median)`,
    "",
    table(headers, rows),
    "",
    `\`backup verify\` of the tar.gz (re-hash + integrity_check of every snapshot): ${(verifyMs / 1000).toFixed(1)} s.`,
    "Every case is credited with the agent DB's bytes; the backup also snapshots the global DB, runs",
    "integrity_check on every snapshot (in a worker thread, overlapped with archiving), hashes, writes the",
    "archive and fsyncs it. gzip runs at level 1.",
  ].join("\n");
}

export async function run() {
  return withTempDir("backup", async (dir) => {
    const home = buildHome(dir);
    try {
      const dbBytes = fileBytes(home.agent("main").db.path);
      progress(`backup: agent DB ${fmtBytes(dbBytes)}; measuring`);
      const { samples, verifyMs } = await measure(home, dir);
      const markdown = render(dbBytes, samples, verifyMs);
      return {
        name: "backup",
        title: "Backup",
        markdown,
        targets: targetsOf(samples),
        results: { dbBytes, samples, verifyMs },
      };
    } finally {
      home.close();
    }
  });
}

await runIfMain(import.meta.url, run);
