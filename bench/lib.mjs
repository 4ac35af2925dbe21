// Shared helpers for the benchmarks: temp dirs, bare "floor" databases, timing, statistics and
// markdown rendering. Every bench module exports `run()` returning a result section, and can also
// be run alone (`node bench/append.mjs`), which prints its section.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CONNECTION_PRAGMAS } from "../dist/db/database.js";
import { chooseDriver } from "../dist/db/driver-choice.js";
import { loadMigrations } from "../dist/db/schema.js";
import { callerCatchUps } from "../dist/db/wal-signal.js";

/** The engine this run measures: the library's choice for this runtime (or as forced). */
export const DRIVER = chooseDriver();

/**
 * node:sqlite behind the few better-sqlite3 calls the floors make (`pragma`, `transaction`), so a
 * floor on Node 24 is bare node:sqlite, the engine the library runs on there.
 */
function openNodeBare(path, readonly) {
  const { DatabaseSync } = createRequire(import.meta.url)("node:sqlite");
  const db = new DatabaseSync(path, { readOnly: readonly, timeout: 5000 });
  const pragma = (source, options = {}) => {
    const rows = db.prepare(`PRAGMA ${source}`).all();
    return options.simple ? Object.values(rows[0] ?? {})[0] : rows;
  };
  const transaction =
    (fn) =>
    (...args) => {
      db.exec("BEGIN");
      try {
        const result = fn(...args);
        db.exec("COMMIT");
        return result;
      } catch (error) {
        if (db.isTransaction) db.exec("ROLLBACK");
        throw error;
      }
    };
  return {
    name: path,
    prepare: (sql) => db.prepare(sql),
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
    pragma,
    transaction,
  };
}

function openBare(path, readonly = false) {
  if (DRIVER === "node") return openNodeBare(path, readonly);
  const Database = createRequire(import.meta.url)("better-sqlite3");
  return new Database(path, { readonly });
}

/** `BENCH_QUICK=1`: a smoke run with small sizes and few iterations. */
export const QUICK = process.env.BENCH_QUICK === "1";

const started = process.hrtime.bigint();

/** One progress line on stderr, stamped with seconds since this process started. */
export function progress(message) {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stderr.write(`[${seconds.toFixed(1).padStart(6)}s] ${message}\n`);
}

export function makeTempDir(name) {
  return mkdtempSync(join(tmpdir(), `agentstate-bench-${name}-`));
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true });
}

/** Runs `fn(dir)` with a fresh temp dir, deleted afterwards even when `fn` throws. */
export async function withTempDir(name, fn) {
  const dir = makeTempDir(name);
  try {
    return await fn(dir);
  } finally {
    removeDir(dir);
  }
}

/**
 * A bare connection on the run's engine (better-sqlite3 or node:sqlite, see `DRIVER`) with the
 * library's connection pragmas. With `schema`, the
 * agent schema files the library ships (dist/db/schema/agent/*.sql, in order) are applied first,
 * so floor tables and indexes are exactly the store's. With `autoVacuum`, a new file is made
 * incremental first (as the store's files: a pointer map beside the tables), before the journal
 * mode writes its first page.
 */
export function openBareDb(path, { schema = false, readonly = false, autoVacuum = false } = {}) {
  const db = openBare(path, readonly);
  if (autoVacuum) db.exec("PRAGMA auto_vacuum = INCREMENTAL");
  for (const [name, value] of CONNECTION_PRAGMAS) {
    if (readonly && name === "journal_mode") continue;
    db.pragma(`${name} = ${value}`);
  }
  if (schema) {
    db.exec("BEGIN IMMEDIATE");
    for (const migration of loadMigrations("agent")) db.exec(migration.sql);
    db.exec("COMMIT");
  }
  return db;
}

export function sqliteVersion() {
  const db = openBare(":memory:");
  try {
    return db.prepare("SELECT sqlite_version() AS v").get().v;
  } finally {
    db.close();
  }
}

/** mulberry32: a small seeded PRNG, so every run generates the same data. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// The WAL: the largest -wal file a module's store databases reached

const watchedWals = new Set();
let largestWalBytes = 0;
/** Per phase of a module (see `walPhase`): the largest -wal and the caller checkpoints in it. */
const walPhases = [];
let phaseLargest = 0;
let phaseCountAt = 0;
let longestCatchUpMs = 0;

/** Samples the -wal of `dbPath` from now on (in `compare` every 256 operations, and on demand). */
export function watchWal(dbPath) {
  watchedWals.add(`${dbPath}-wal`);
  sampleWal();
}

export function sampleWal() {
  for (const path of watchedWals) {
    const size = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
    if (size > largestWalBytes) largestWalBytes = size;
    if (size > phaseLargest) phaseLargest = size;
  }
}

/**
 * Ends a phase of the module (seeding, a measurement) named `name`: records the largest -wal and
 * the caller-thread checkpoints since the previous call, so a miss can be traced to its phase.
 * Resets `callerCatchUps.longestMs` (kept whole in `walTargets`) to time each phase alone.
 */
export function walPhase(name) {
  sampleWal();
  walPhases.push({
    name,
    largest: phaseLargest,
    count: callerCatchUps.count - phaseCountAt,
    longestMs: callerCatchUps.longestMs,
  });
  longestCatchUpMs = Math.max(longestCatchUpMs, callerCatchUps.longestMs);
  callerCatchUps.longestMs = 0;
  phaseLargest = 0;
  phaseCountAt = callerCatchUps.count;
}

/** The phases recorded by `walPhase`, as a markdown table (empty when none were). */
export function walPhaseTable() {
  if (walPhases.length === 0) return "";
  return table(
    ["phase", "largest -wal", "caller-thread checkpoints", "longest"],
    walPhases.map((p) => [
      p.name,
      fmtBytes(p.largest),
      String(p.count),
      `${p.longestMs.toFixed(1)} ms`,
    ]),
  );
}

const WAL_LIMIT = 64 * 1024 * 1024;
const CALLER_CHECKPOINT_LIMIT_MS = 20;

/**
 * The two WAL targets every store bench reports: the largest -wal seen (sampled) stays within
 * 64 MiB, and no checkpoint on the caller's thread (the backstop of src/db/wal-signal.ts) took
 * longer than 20 ms. `others`: the counts other processes of the module reported.
 */
export function walTargets(module, others = []) {
  sampleWal();
  const catchUps = [callerCatchUps, ...others];
  const count = catchUps.reduce((n, c) => n + c.count, 0);
  const longestMs = Math.max(longestCatchUpMs, ...catchUps.map((c) => c.longestMs));
  return [
    {
      name: `${module}: largest -wal seen ≤ 64 MB`,
      value: fmtBytes(largestWalBytes),
      met: largestWalBytes <= WAL_LIMIT,
    },
    {
      name: `${module}: no checkpoint > 20 ms on the caller's thread`,
      value: `${count} caller checkpoints, longest ${longestMs.toFixed(1)} ms`,
      met: longestMs <= CALLER_CHECKPOINT_LIMIT_MS,
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Timing

function nowNs() {
  return process.hrtime.bigint();
}

/**
 * Measures several cases against each other. Each case is `{ fn, iterations, warmup?, rounds? }`
 * where `fn(i)` does one operation. All cases warm up first; then their rounds are interleaved
 * (A B C A B C …), so a noisy neighbour or a CPU clock change hits every case alike. Each
 * operation is timed alone (for percentiles); throughput is operations over the wall time of the
 * round, and the median round is reported.
 */
export function compare(cases, { rounds = 3 } = {}) {
  const entries = Object.entries(cases);
  for (const [, c] of entries) {
    for (let i = 0; i < (c.warmup ?? 0); i++) c.fn(i);
  }
  const state = new Map(entries.map(([name]) => [name, { samples: [], roundRates: [] }]));
  const maxRounds = Math.max(...entries.map(([, c]) => c.rounds ?? rounds));
  let counter = 0;
  for (let round = 0; round < maxRounds; round++) {
    for (const [name, c] of entries) {
      if (round >= (c.rounds ?? rounds)) continue;
      const s = state.get(name);
      const per = c.iterations;
      const roundStart = nowNs();
      for (let i = 0; i < per; i++) {
        const t0 = nowNs();
        c.fn(counter++);
        s.samples.push(Number(nowNs() - t0));
        if ((counter & 255) === 0 && watchedWals.size > 0) sampleWal();
      }
      const elapsed = Number(nowNs() - roundStart);
      s.roundRates.push((per * (c.opsPerCall ?? 1) * 1e9) / elapsed);
    }
  }
  const result = {};
  for (const [name, c] of entries) {
    const s = state.get(name);
    result[name] = {
      ...stats(s.samples),
      opsPerSec: median(s.roundRates),
      opsPerCall: c.opsPerCall ?? 1,
    };
  }
  return result;
}

/** Times `fn` once, in milliseconds. */
export function timeOnce(fn) {
  const t0 = nowNs();
  const value = fn();
  return { ms: Number(nowNs() - t0) / 1e6, value };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Percentiles by the nearest-rank method, in microseconds, of samples in nanoseconds. */
export function stats(samplesNs) {
  const sorted = Float64Array.from(samplesNs).sort();
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    p50: at(50) / 1e3,
    p99: at(99) / 1e3,
    p999: sorted[Math.ceil(0.999 * sorted.length) - 1] / 1e3,
    max: sorted[sorted.length - 1] / 1e3,
    mean: sum / sorted.length / 1e3,
  };
}

// ---------------------------------------------------------------------------------------------
// Formatting

const grouped = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** Operations per second, grouped: 12,345; small rates keep two significant decimals (0.25). */
export function fmtRate(value) {
  if (value === undefined) return "–";
  return value < 10 ? value.toPrecision(2) : grouped.format(value);
}

/** A duration given in µs, shown in µs below 10 ms and in ms above. */
export function fmtUs(us) {
  if (us === undefined) return "–";
  if (us >= 10_000) return `${(us / 1000).toFixed(0)} ms`;
  if (us >= 1000) return `${(us / 1000).toFixed(2)} ms`;
  if (us >= 100) return `${us.toFixed(0)} µs`;
  return `${us.toFixed(1)} µs`;
}

/** A ratio such as 0.42 or 3.1. */
export function fmtRatio(value) {
  if (value === undefined || !Number.isFinite(value)) return "–";
  if (value >= 100) return grouped.format(value);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** A speed-up such as "1,234× faster" or "0.5× (slower)". */
export function fmtSpeedup(value) {
  if (value === undefined || !Number.isFinite(value)) return "–";
  return value >= 1 ? `${fmtRatio(value)}× faster` : `${fmtRatio(value)}× (slower)`;
}

export function fmtCount(value) {
  return grouped.format(value);
}

export function fmtBytes(bytes) {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${Math.round(bytes)} B`;
}

export function met(ok) {
  return ok ? "**yes**" : "**NO**";
}

/** A markdown table: the first column left-aligned (labels), the others right-aligned (numbers). */
export function table(headers, rows) {
  const align = headers.map((_, i) => (i === 0 ? ":---" : "---:"));
  const line = (cells) => `| ${cells.map((c) => String(c).replaceAll("|", "\\|")).join(" | ")} |`;
  return [line(headers), `|${align.join("|")}|`, ...rows.map(line)].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Running a module

/**
 * Lets a bench module run alone: `node bench/tail.mjs` prints its section; with
 * `--json-out FILE` (how run.mjs calls it) the section is also written as JSON to FILE.
 */
export async function runIfMain(moduleUrl, run) {
  if (!process.argv[1] || pathToFileURL(process.argv[1]).href !== moduleUrl) return;
  const section = {
    ...(await run()),
    driver: DRIVER,
    node: process.version,
    sqlite: sqliteVersion(),
  };
  const outIndex = process.argv.indexOf("--json-out");
  if (outIndex !== -1) writeFileSync(process.argv[outIndex + 1], JSON.stringify(section));
  else process.stdout.write(`${section.markdown}\n`);
}
