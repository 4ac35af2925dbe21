// Backup throughput: `createBackup` of a home whose agent database is ~200 MB, against a bare
// `VACUUM INTO` of that same database in the same run (issue 5: at least 50% of its throughput),
// with and without gzip. Rounds are interleaved (A B C A B C …) so machine noise hits every case.
// Throughput is the agent database's bytes over the wall time, although the backup does more
// (the global database, integrity checks, hashing, the archive, fsync). Each round also times the
// backup's stages one by one on a snapshot of the same database, and splits each backup's wall
// time into its phases, so a reader sees where the time goes.
import { createHash } from "node:crypto";
import { closeSync, openSync, readSync, renameSync, rmSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { createBackup } from "../dist/backup/create-backup.js";
import { checkSnapshot, SnapshotChecker } from "../dist/backup/snapshot-check.js";
import { TarWriter } from "../dist/backup/tar-writer.js";
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
const ROUNDS = QUICK ? 1 : 5;
const BATCH = 2000;
const SETTLE_MS = 300;

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

/** Wall and CPU time (all of the process's threads: the gzip thread pool, the check worker). */
async function timeStage(fn) {
  const cpu0 = process.cpuUsage();
  const { ms } = await timeAsync(fn);
  const cpu = process.cpuUsage(cpu0);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** Reads `path` in 4 MiB blocks (the archive writer's block size), handing each to `fn`. */
function eachBlock(path, fn) {
  const fd = openSync(path, "r");
  const block = Buffer.allocUnsafeSlow(4 << 20);
  try {
    for (let at = 0; ; ) {
      const n = readSync(fd, block, 0, block.length, at);
      if (n === 0) break;
      fn(block.subarray(0, n));
      at += n;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * How a plain backup and verify check a large snapshot (integrity_check without the FTS5 tables, and
 * the FTS5 tables' own check, at once); timed with starting the two threads.
 */
const HALVES = "integrity_check in two halves, two threads (the backup's)";

async function checkInHalves(snapshot) {
  const checker = new SnapshotChecker({ threads: 2, splitFromBytes: 0 });
  try {
    const { integrityCheck } = await checker.check(snapshot);
    if (integrityCheck !== "ok") throw new Error(`bench snapshot: ${integrityCheck}`);
  } finally {
    checker.close();
  }
}

/**
 * Each stage of a backup alone, on a bare VACUUM INTO snapshot of the agent database: what the
 * backup's wall time is made of, and what the two cores it shares have to do after the snapshot.
 */
async function timeStages(source, dir) {
  const snapshot = join(dir, "stage.sqlite");
  const archive = join(dir, "stage.tar");
  const stages = {};
  const db = openBareDb(source);
  stages["VACUUM INTO (the floor)"] = await timeStage(() => db.exec(`VACUUM INTO '${snapshot}'`));
  rmSync(snapshot);
  // What the backup runs: the copy is a temp file that is archived, not kept, so it is not synced.
  db.exec("PRAGMA synchronous = OFF");
  stages["VACUUM INTO, synchronous=OFF (the backup's)"] = await timeStage(() =>
    db.exec(`VACUUM INTO '${snapshot}'`),
  );
  db.close();
  stages["read + SHA-256"] = await timeStage(() => {
    const hash = createHash("sha256");
    eachBlock(snapshot, (block) => hash.update(block));
    hash.digest();
  });
  let writer;
  stages["tar write (read, hash, write)"] = await timeStage(async () => {
    writer = TarWriter.create(archive, { gzip: false });
    await writer.addFile("databases/agent.sqlite", snapshot);
  });
  stages["fsync of the tar"] = await timeStage(() => writer.finish());
  stages["rename into place"] = await timeStage(() => renameSync(archive, `${archive}.done`));
  rmSync(`${archive}.done`);
  stages["gzip level 1, one thread"] = await timeStage(() =>
    eachBlock(snapshot, (block) => gzipSync(block, { level: 1, memLevel: 9 })),
  );
  stages["tar.gz write (parallel gzip) + fsync"] = await timeStage(async () => {
    const gz = TarWriter.create(`${archive}.gz`, { gzip: true });
    await gz.addFile("databases/agent.sqlite", snapshot);
    await gz.finish();
  });
  rmSync(`${archive}.gz`);
  stages["integrity_check, whole, one thread"] = await timeStage(() => {
    const { integrityCheck } = checkSnapshot(snapshot);
    if (integrityCheck !== "ok") throw new Error(`bench snapshot: ${integrityCheck}`);
  });
  stages[HALVES] = await timeStage(() => checkInHalves(snapshot));
  rmSync(snapshot);
  return stages;
}

/** Splits a backup's wall time by its progress events: snapshots, archive bodies, the rest. */
function phaseClock() {
  const t0 = performance.now();
  let first;
  let last;
  return {
    onProgress(event) {
      if (event.phase !== "archive") return;
      last = performance.now();
      first ??= last;
    },
    phases(totalMs) {
      return {
        snapshots: first - t0,
        archive: last - first,
        tail: t0 + totalMs - last,
      };
    },
  };
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
      const clock = phaseClock();
      const { ms, value } = await timeAsync(() =>
        createBackup(home, { out: out("b.tar"), compress: false, onProgress: clock.onProgress }),
      );
      rmSync(value.archive);
      return { ms, bytes: value.archiveBytes, phases: clock.phases(ms) };
    },
    "backup create (tar.gz)": async () => {
      const name = `b-${Date.now()}.tar.gz`;
      const clock = phaseClock();
      const { ms, value } = await timeAsync(() =>
        createBackup(home, { out: out(name), onProgress: clock.onProgress }),
      );
      return {
        ms,
        bytes: value.archiveBytes,
        archive: value.archive,
        phases: clock.phases(ms),
      };
    },
  };
}

async function measure(home, dir) {
  const cases = makeCases(home, dir);
  const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  const stageRounds = [];
  let archive; // the latest tar.gz, kept to time `verify` on at the end
  for (let round = 0; round < ROUNDS; round++) {
    stageRounds.push(await timeStages(home.agent("main").db.path, dir));
    for (const [name, run] of Object.entries(cases)) {
      // A backup returns while its check threads still close the deleted snapshots (freeing 200 MB
      // of page cache takes tens of ms): that must not slow the next case, the floor included.
      await delay(SETTLE_MS);
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
  return { samples, stageRounds, verifyMs: verify.ms };
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

function renderStages(stageRounds) {
  const names = Object.keys(stageRounds[0]);
  const of = (name, key) => median(stageRounds.map((round) => round[name][key]));
  const floor = of("VACUUM INTO (the floor)", "ms");
  const rows = names.map((name) => [
    name,
    `${of(name, "ms").toFixed(0)} ms`,
    `${of(name, "cpuMs").toFixed(0)} ms`,
    `${(of(name, "ms") / floor).toFixed(2)}×`,
  ]);
  return table(["stage, alone, on the agent DB's snapshot", "wall", "CPU", "× floor"], rows);
}

/**
 * What the stages allow at best on this machine: the integrity check reads the finished snapshot,
 * so those two run one after the other; everything else could at most spread over all cores.
 */
function renderBounds(stageRounds) {
  const of = (name, key) => median(stageRounds.map((round) => round[name][key]));
  const floor = of("VACUUM INTO (the floor)", "ms");
  const snapshot = of("VACUUM INTO, synchronous=OFF (the backup's)", "ms");
  const halves = of(HALVES, "ms");
  const halvesCpu = of(HALVES, "cpuMs");
  const whole = of("integrity_check, whole, one thread", "cpuMs");
  const copy = of("tar write (read, hash, write)", "cpuMs");
  const gzip = of("gzip level 1, one thread", "cpuMs");
  const cores = availableParallelism();
  const tarBound = snapshot + Math.max(halves, (halvesCpu + copy) / cores);
  const gzBound = snapshot + Math.max(whole, (whole + copy + gzip) / cores);
  const pct = (ms) => `${((floor / ms) * 100).toFixed(0)}%`;
  return [
    `Best case on this machine (${cores} cores), from the stages above: the snapshot, then its`,
    "integrity_check (it reads the finished snapshot; in two halves for tar, whole for tar.gz), with",
    "everything else spread over all cores:",
    `tar ${tarBound.toFixed(0)} ms (${pct(tarBound)} of the floor's throughput), tar.gz ${gzBound.toFixed(0)} ms (${pct(gzBound)}).`,
    `gzip level 1 alone costs ${(gzip / floor).toFixed(1)}× the floor in CPU.`,
  ].join("\n");
}

function renderPhases(samples) {
  const rows = Object.entries(samples)
    .filter(([name]) => name.startsWith("backup"))
    .map(([name, list]) => {
      const of = (key) => `${median(list.map((s) => s.phases[key])).toFixed(0)} ms`;
      return [name, of("snapshots"), of("archive"), of("tail")];
    });
  const headers = ["case", "snapshots", "archive bodies", "rest (checks, manifest, fsync, rename)"];
  return table(headers, rows);
}

function render(dbBytes, samples, stageRounds, verifyMs) {
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
    `\`backup verify\` of the tar.gz (re-hash + integrity_check of every snapshot, a large one split in two`,
    `halves on two threads): ${(verifyMs / 1000).toFixed(1)} s.`,
    "Every case is credited with the agent DB's bytes; the backup also snapshots the global DB, runs",
    "integrity_check on every snapshot (in worker threads, overlapped with archiving; for tar a large one in",
    "two halves on two threads: integrity_check with the FTS5 tables left out, and the FTS5 tables' own",
    "check), hashes, writes the archive and fsyncs it. Its snapshots are VACUUM INTO with synchronous=OFF",
    "(a temp file that is archived, then deleted; the archive is what is fsynced); the floor keeps the",
    "library's synchronous=NORMAL. The tar is written with O_DIRECT, past the page cache. gzip runs at",
    "level 1, one gzip member per 4 MiB block, compressed in parallel in the thread pool. The check threads",
    `close the deleted snapshots after the backup returns; each case starts ${SETTLE_MS} ms after the last, so`,
    "that never slows the next case.",
    "",
    "Where a backup's wall time goes (its progress events split it: the snapshots until the first archive",
    "byte, the archive bodies, then waiting for the integrity checks, the manifest, fsync and rename):",
    "",
    renderPhases(samples),
    "",
    "Each stage alone, on a snapshot of the same database (CPU counts every thread of the process; the",
    "machine's cores bound how much of it can overlap):",
    "",
    renderStages(stageRounds),
    "",
    renderBounds(stageRounds),
  ].join("\n");
}

export async function run() {
  return withTempDir("backup", async (dir) => {
    const home = buildHome(dir);
    try {
      const dbBytes = fileBytes(home.agent("main").db.path);
      progress(`backup: agent DB ${fmtBytes(dbBytes)}; measuring`);
      const { samples, stageRounds, verifyMs } = await measure(home, dir);
      const markdown = render(dbBytes, samples, stageRounds, verifyMs);
      return {
        name: "backup",
        title: "Backup",
        markdown,
        targets: targetsOf(samples),
        results: { dbBytes, samples, stageRounds, verifyMs },
      };
    } finally {
      home.close();
    }
  });
}

await runIfMain(import.meta.url, run);
