// Legacy import throughput (`agentstate doctor --fix`): `runDoctorFix` on a home holding one large
// transcript, in MB/s of the transcript file, against floors measured in the same run on the same
// file (issue: at least 50% of the read+parse+insert floor). Floors: streaming read + JSON.parse
// of every line + bare SQLite on the run's engine inserts of the same rows in batched transactions, and
// beside it the read+parse-only and insert-only stages. Rounds are interleaved (A B C D A B C D …).
// Peak RSS of the import and of the floor is measured in child processes (this file run with
// `--rss-child`), so this process's own heap does not count.
import { spawn } from "node:child_process";
import {
  closeSync,
  cpSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from "node:fs";
import { basename, join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { fileURLToPath } from "node:url";
import { callerCatchUps } from "../dist/db/wal-signal.js";
import { runDoctorFix } from "../dist/index.js";
import { parentIdOf } from "../dist/transcript/event.js";
import { indexedText } from "../dist/transcript/indexed-text.js";
import { searchableText } from "../dist/transcript/search-text.js";
import { generateLegacyHome } from "../test/fixtures/generate-legacy-home.mjs";
import { prepareLean } from "./lean-layout.mjs";
import {
  fmtCount,
  fmtRatio,
  median,
  met,
  openBareDb,
  progress,
  QUICK,
  runIfMain,
  sampleWal,
  table,
  walTargets,
  watchWal,
  withTempDir,
} from "./lib.mjs";
import { openTodayDb, prepareToday } from "./today-layout.mjs";

/** Transcript sizes, as the generator's `bigTranscriptMb` (the files come out a little smaller). */
const SIZES_MB = QUICK ? [0.25, 1] : [1, 4, 16];
/** The home of many short sessions: one agent, this many transcripts of about this many events. */
const MANY_SESSIONS = QUICK ? 200 : 2000;
const MANY_EVENTS = 30;
const WARMUP = 1;
const ROUNDS = QUICK ? 2 : 5;
const TARGET_SHARE = 0.4;
/** The import's peak RSS over its baseline stays under this. */
const TARGET_RSS_GROWTH = 64 * 1024 * 1024;
/** Read size of the floors' line reader, as the importer's (src/doctor/line-reader.ts). */
const CHUNK_BYTES = 64 * 1024;
const SELF = fileURLToPath(import.meta.url);

/** Events per write transaction of the transcript importer (its `BATCH`), read from the build. */
function importerBatch() {
  const source = readFileSync(
    fileURLToPath(new URL("../dist/doctor/kinds/transcript-kind.js", import.meta.url)),
    "utf8",
  );
  const found = /const BATCH = (\d+);/.exec(source);
  if (found) return Number(found[1]);
  progress("doctor: could not read the importer's batch size from the build; using 500");
  return 500;
}
const BATCH = importerBatch();

/** Megabytes of 10^6 bytes, as in the MB/s columns. */
function mb(bytes) {
  return `${(bytes / 1e6).toFixed(bytes < 10e6 ? 2 : 1)} MB`;
}

function mbps(bytes, ms) {
  return bytes / 1e6 / (ms / 1000);
}

function elapsedMs(t0) {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

// ---------------------------------------------------------------------------------------------
// Floors

/**
 * The lines of a file, streamed: 64 KiB reads, split at "\n" (the decoder keeps a character cut
 * by a chunk boundary whole). The floors' reader: no BOM, CR or over-long line handling.
 */
function* lines(path) {
  const fd = openSync(path, "r");
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  const decoder = new StringDecoder("utf8");
  let rest = "";
  try {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      const text = rest + decoder.write(chunk.subarray(0, read));
      let start = 0;
      for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
        yield text.slice(start, nl);
        start = nl + 1;
      }
      rest = text.slice(start);
    }
    rest += decoder.end();
    if (rest !== "") yield rest;
  } finally {
    closeSync(fd);
  }
}

/** The row's created_at as the store derives it: the event's timestamp, else now. */
function createdAtOf(value, now) {
  const parsed = typeof value.timestamp === "string" ? Date.parse(value.timestamp) : Number.NaN;
  return Number.isFinite(parsed) ? parsed : now;
}

/**
 * A fresh bare database in today's design (bench/today-layout.mjs; created before the clock
 * starts). With `sameRows`, each event also gets the rows today's design writes for it: its
 * identity row and its search text in the FTS index, and the session's tail once per transaction.
 */
function openFloorDb(path, firstSessionId, { sameRows = false } = {}) {
  const db = openTodayDb(path);
  const stmt = prepareToday(db);
  let sessionId = firstSessionId;
  let seq = 0;
  let rows = 0;
  let pending = 0;
  let last;
  const now = Date.now();
  const tail = () => {
    if (sameRows && last) stmt.tail.run(seq, last.id, last.createdAt, sessionId);
  };
  const commit = () => {
    tail();
    stmt.commit.run();
  };
  return {
    db,
    /** Inserts one event's rows; commits every BATCH events, as the importer does. */
    insert(json, createdAt, event) {
      if (pending === 0) stmt.begin.run();
      if (seq === 0) stmt.session.run(sessionId, now, now);
      const rowid = stmt.event.run(sessionId, ++seq, json, createdAt).lastInsertRowid;
      rows++;
      if (sameRows) {
        const parent = typeof event.parentId === "string" ? event.parentId : null;
        stmt.identity.run(
          sessionId,
          event.id,
          seq,
          event.type,
          parent ? 1 : 0,
          parent,
          null,
          createdAt,
        );
        const text = searchableText(event);
        if (text !== "") stmt.text.run(rowid, text);
        last = { id: event.id, createdAt };
      }
      if (++pending === BATCH) {
        commit();
        pending = 0;
      }
    },
    /** Moves on to another session's rows (several files); they share the open transaction. */
    nextSession(id) {
      if (pending > 0) tail();
      sessionId = id;
      seq = 0;
      last = undefined;
    },
    /** Commits the last batch and closes (which checkpoints the WAL, as the store's close does). */
    finish() {
      if (pending > 0) commit();
      db.close();
      return rows;
    },
  };
}

/**
 * A fresh bare database in the lean design (bench/lean-layout.mjs; incremental auto-vacuum, as
 * the store's files), created before the clock starts: each event's row with its identity
 * columns, and its search text as the store indexes it (`indexedText`) in the text-keeping FTS
 * table, in bulk before each commit. The same interface as `openFloorDb`.
 */
function openLeanFloorDb(path) {
  const db = openBareDb(path, { autoVacuum: true });
  const lean = prepareLean(db);
  const texts = [];
  let sessionNo = 0;
  let seq = 0;
  let rows = 0;
  let pending = 0;
  const commit = () => {
    lean.indexPending(texts);
    lean.stmt.commit.run();
  };
  return {
    db,
    insert(json, createdAt, event) {
      if (pending === 0) lean.stmt.begin.run();
      const rowid = lean.stmt.insert.run(
        sessionNo,
        ++seq,
        event.id,
        event.type,
        parentIdOf(event),
        null,
        createdAt,
        json,
      ).lastInsertRowid;
      texts.push([rowid, indexedText(event)]);
      rows++;
      if (++pending === BATCH) {
        commit();
        pending = 0;
      }
    },
    nextSession() {
      sessionNo++;
      seq = 0;
    },
    finish() {
      if (pending > 0) commit();
      db.close();
      return rows;
    },
  };
}

/** read + JSON.parse only (no database). */
function floorReadParse(path) {
  const t0 = process.hrtime.bigint();
  const now = Date.now();
  let rows = 0;
  let sink = 0;
  for (const line of lines(path)) {
    if (line.trim() === "") continue;
    sink += createdAtOf(JSON.parse(line), now) & 1;
    rows++;
  }
  return { ms: elapsedMs(t0), rows, sink };
}

/** insert only: the rows pre-read and pre-parsed, inserted in the same batches. */
function floorInsert(parsedRows, dbPath, sessionId) {
  const floor = openFloorDb(dbPath, sessionId);
  const t0 = process.hrtime.bigint();
  for (const row of parsedRows) floor.insert(row.json, row.createdAt);
  const rows = floor.finish();
  return { ms: elapsedMs(t0), rows };
}

/**
 * read + JSON.parse + insert, streaming: the floor of the import (with `sameRows`, of the same
 * rows the store writes). Each file is its own session, named as the file; BATCH rows per
 * transaction whatever file they come from. Returns the rows written.
 */
function floorReadParseInsert(files, dbPath, options = {}) {
  const sessionOf = (file) => basename(file, ".jsonl");
  const floor = options.lean
    ? openLeanFloorDb(dbPath)
    : openFloorDb(dbPath, sessionOf(files[0]), options);
  const t0 = process.hrtime.bigint();
  const now = Date.now();
  for (const file of files) {
    floor.nextSession(sessionOf(file));
    for (const line of lines(file)) {
      if (line.trim() === "") continue;
      const event = JSON.parse(line);
      floor.insert(line, createdAtOf(event, now), event);
    }
  }
  const rows = floor.finish();
  return { ms: elapsedMs(t0), rows };
}

function removeDb(path) {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}

// ---------------------------------------------------------------------------------------------
// The store

/**
 * `runDoctorFix` on a fresh copy of the template home (the copy is not timed), without the
 * pre-migration backup (bench/backup.mjs measures that). Also splits the time at the moment the
 * transcript's import starts: before = plan (SHA-256 of every source, transcripts' lines counted)
 * + setup.
 */
async function storeImport(template, home, transcriptPath) {
  cpSync(template, home, { recursive: true });
  let transcriptAt;
  const t0 = process.hrtime.bigint();
  const report = await runDoctorFix({
    home,
    keepSources: true,
    backup: async () => "(bench: no backup)",
    onProgress: ({ source }) => {
      if (source.path === transcriptPath) transcriptAt = process.hrtime.bigint();
    },
  });
  const end = process.hrtime.bigint();
  const source = report.sources.find((s) => s.path === transcriptPath);
  if (report.status !== "succeeded" || source?.status !== "imported") {
    throw new Error(
      `doctor import did not succeed: ${report.status}, transcript ${source?.status} (${source?.error})`,
    );
  }
  rmSync(home, { recursive: true, force: true });
  return {
    ms: Number(end - t0) / 1e6,
    beforeMs: Number(transcriptAt - t0) / 1e6,
    importMs: Number(end - transcriptAt) / 1e6,
    rows: source.records,
  };
}

/** `runDoctorFix` on a fresh copy of a home of many short transcripts; rows = their records. */
async function storeImportMany(template, home) {
  cpSync(template, home, { recursive: true });
  const t0 = process.hrtime.bigint();
  const report = await runDoctorFix({
    home,
    keepSources: true,
    backup: async () => "(bench: no backup)",
  });
  const ms = elapsedMs(t0);
  const transcripts = report.sources.filter((s) => s.kind === "transcript");
  if (report.status !== "succeeded" || transcripts.some((s) => s.status !== "imported")) {
    throw new Error(`doctor import of the many-sessions home did not succeed: ${report.status}`);
  }
  rmSync(home, { recursive: true, force: true });
  return { ms, rows: transcripts.reduce((n, s) => n + s.records, 0) };
}

// ---------------------------------------------------------------------------------------------
// Peak RSS, in a child process

/**
 * Runs one import in a child process; returns its RSS before the import and its peak RSS. The
 * -wal files of `walOf` (database paths) are sampled every 5 ms meanwhile.
 */
async function measureRss(mode, args, walOf = []) {
  for (const path of walOf) watchWal(path);
  const child = spawn(process.execPath, [SELF, "--rss-child", mode, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
  });
  child.stderr.on("data", (chunk) => {
    err += chunk;
  });
  const sampler = setInterval(sampleWal, 5);
  const code = await new Promise((resolve) => child.once("close", resolve));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`RSS child (${mode}) failed (${code}): ${err}`);
  return JSON.parse(out);
}

/** The agent databases a legacy home's import creates. */
function agentDbsOf(home) {
  return readdirSync(join(home, "agents")).map((id) =>
    join(home, "agents", id, "agent", "agent.sqlite"),
  );
}

/** The child's side: `node bench/doctor.mjs --rss-child store|floor …` prints one JSON line. */
async function rssChild(mode, ...args) {
  const baseline = process.memoryUsage().rss;
  const peakBefore = process.resourceUsage().maxRSS * 1024;
  const t0 = process.hrtime.bigint();
  if (mode === "store") {
    const [home] = args;
    const report = await runDoctorFix({
      home,
      keepSources: true,
      backup: async () => "(bench: no backup)",
    });
    if (report.status !== "succeeded") throw new Error(`doctor import: ${report.status}`);
  } else {
    const [path, dbPath] = args;
    floorReadParseInsert([path], dbPath);
  }
  const ms = elapsedMs(t0);
  const peak = process.resourceUsage().maxRSS * 1024;
  const catchUps = { ...callerCatchUps };
  process.stdout.write(`${JSON.stringify({ baseline, peakBefore, peak, ms, catchUps })}\n`);
}

// ---------------------------------------------------------------------------------------------
// Measuring

/** A legacy home with one transcript of about `sizeMb` (no other transcripts, cron or daycare). */
function makeTemplate(dir, sizeMb) {
  const counts = generateLegacyHome(dir, {
    agents: 1,
    sessions: 0,
    deleted: 0,
    cronJobs: 0,
    cronRuns: 0,
    daycare: false,
    bigTranscriptMb: sizeMb,
    seed: 7 + Math.round(sizeMb * 100),
  });
  const sessionId = counts.bigSessionId;
  const transcriptPath = `agents/main/sessions/${sessionId}.jsonl`;
  const file = join(dir, transcriptPath);
  return {
    dir,
    sessionId,
    transcriptPath,
    file,
    bytes: statSync(file).size,
    events: counts.bigEvents,
  };
}

/** The file's rows, read and parsed once (the insert-only floor's input); checks the encoding. */
function parseAll(file) {
  const now = Date.now();
  const rows = [];
  for (const line of lines(file)) {
    if (line.trim() === "") continue;
    const value = JSON.parse(line);
    // The floors store the line's text as event_json; the store stores JSON.stringify of the
    // parsed event. They are the same bytes for these (compact) files, checked here.
    if (rows.length < 1000 && JSON.stringify(value) !== line) {
      throw new Error("the generated transcript is not in compact JSON; the floors would differ");
    }
    rows.push({ json: line, createdAt: createdAtOf(value, now) });
  }
  return rows;
}

/**
 * Runs each case once per round, rounds interleaved (A B C A B C …) after the warm-up; every case
 * must handle all `rows`. Returns each case's results, warm-up excluded.
 */
async function interleaved(cases, { rows, bytes, what }) {
  const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  for (let round = -WARMUP; round < ROUNDS; round++) {
    for (const [name, fn] of Object.entries(cases)) {
      const result = await fn();
      if (result.rows !== rows) {
        throw new Error(`${name} handled ${result.rows} rows, the input has ${rows}`);
      }
      if (round >= 0) samples[name].push(result);
      const label = round < 0 ? "warm-up" : `round ${round + 1}/${ROUNDS}`;
      progress(
        `doctor: ${what} ${label} ${name}: ${result.ms.toFixed(0)} ms ` +
          `(${mbps(bytes, result.ms).toFixed(1)} MB/s)`,
      );
    }
  }
  return samples;
}

async function measureSize(dir, sizeMb) {
  progress(`doctor: generating a legacy home with a ~${sizeMb} MB transcript`);
  const t = makeTemplate(join(dir, `template-${sizeMb}`), sizeMb);
  const parsedRows = parseAll(t.file);
  progress(`doctor: ${mb(t.bytes)}, ${fmtCount(t.events)} events; ${ROUNDS} interleaved rounds`);
  const work = (name) => join(dir, `${name}-${sizeMb}`);
  const cases = {
    store: () => storeImport(t.dir, work("home"), t.transcriptPath),
    "read+parse+insert": () => {
      const r = floorReadParseInsert([t.file], work("floor.sqlite"));
      removeDb(work("floor.sqlite"));
      return r;
    },
    "same rows": () => {
      const r = floorReadParseInsert([t.file], work("same.sqlite"), { sameRows: true });
      removeDb(work("same.sqlite"));
      return r;
    },
    "lean rows": () => {
      const r = floorReadParseInsert([t.file], work("lean.sqlite"), { lean: true });
      removeDb(work("lean.sqlite"));
      return r;
    },
    "read+parse": () => floorReadParse(t.file),
    insert: () => {
      const r = floorInsert(parsedRows, work("insert.sqlite"), t.sessionId);
      removeDb(work("insert.sqlite"));
      return r;
    },
  };
  const samples = await interleaved(cases, { rows: t.events, bytes: t.bytes, what: mb(t.bytes) });
  progress(`doctor: ${mb(t.bytes)} peak RSS (child processes)`);
  cpSync(t.dir, work("rss-home"), { recursive: true });
  const storeRss = await measureRss("store", [work("rss-home")], agentDbsOf(work("rss-home")));
  rmSync(work("rss-home"), { recursive: true, force: true });
  const dbPath = work("rss-floor.sqlite");
  const floorRss = await measureRss("floor", [t.file, dbPath]);
  removeDb(dbPath);
  rmSync(t.dir, { recursive: true, force: true });
  const ms = (name) => median(samples[name].map((s) => s.ms));
  // The split of the store's time is that of its median round (lower middle for an even count),
  // so that its two parts add up to the round's total.
  const middle = [...samples.store].sort((a, b) => a.ms - b.ms)[(samples.store.length - 1) >> 1];
  return {
    bytes: t.bytes,
    events: t.events,
    ms: {
      store: ms("store"),
      split: middle,
      floor: ms("read+parse+insert"),
      same: ms("same rows"),
      lean: ms("lean rows"),
      parse: ms("read+parse"),
      insert: ms("insert"),
    },
    rss: { store: storeRss, floor: floorRss },
  };
}

/** A home of many short transcripts: the doctor against the same floors over all its files. */
async function measureMany(dir) {
  progress(`doctor: generating a legacy home of ${fmtCount(MANY_SESSIONS)} short sessions`);
  const template = join(dir, "template-many");
  generateLegacyHome(template, {
    agents: 1,
    sessions: MANY_SESSIONS,
    events: MANY_EVENTS,
    deleted: 0,
    cronJobs: 0,
    cronRuns: 0,
    daycare: false,
  });
  const sessionsDir = join(template, "agents/main/sessions");
  const files = readdirSync(sessionsDir)
    .filter((name) => name.endsWith(".jsonl"))
    .sort()
    .map((name) => join(sessionsDir, name));
  const bytes = files.reduce((n, file) => n + statSync(file).size, 0);
  const events = files.reduce((n, file) => n + parseAll(file).length, 0);
  const work = (name) => join(dir, `${name}-many`);
  const cases = {
    store: () => storeImportMany(template, work("home")),
    "read+parse+insert": () => {
      const r = floorReadParseInsert(files, work("floor.sqlite"));
      removeDb(work("floor.sqlite"));
      return r;
    },
    "same rows": () => {
      const r = floorReadParseInsert(files, work("same.sqlite"), { sameRows: true });
      removeDb(work("same.sqlite"));
      return r;
    },
  };
  const samples = await interleaved(cases, { rows: events, bytes, what: `${files.length} files` });
  rmSync(template, { recursive: true, force: true });
  return {
    files: files.length,
    bytes,
    events,
    ms: {
      store: median(samples.store.map((r) => r.ms)),
      floor: median(samples["read+parse+insert"].map((r) => r.ms)),
      same: median(samples["same rows"].map((r) => r.ms)),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Rendering

function render(results, many) {
  const throughput = results.map((r) => {
    const share = r.ms.floor / r.ms.store;
    return [
      mb(r.bytes),
      fmtCount(r.events),
      mbps(r.bytes, r.ms.store).toFixed(1),
      mbps(r.bytes, r.ms.floor).toFixed(1),
      `${(share * 100).toFixed(0)}%`,
      mbps(r.bytes, r.ms.same).toFixed(1),
      `${((r.ms.same / r.ms.store) * 100).toFixed(0)}%`,
      mbps(r.bytes, r.ms.lean).toFixed(1),
      `${((r.ms.floor / r.ms.lean) * 100).toFixed(0)}%`,
      `${((r.ms.lean / r.ms.store) * 100).toFixed(0)}%`,
      mbps(r.bytes, r.ms.parse).toFixed(1),
      mbps(r.bytes, r.ms.insert).toFixed(1),
      `≥ ${TARGET_SHARE * 100}%`,
      met(share >= TARGET_SHARE),
    ];
  });
  const time = results.map((r) => [
    mb(r.bytes),
    `${r.ms.store.toFixed(0)} ms`,
    `${r.ms.split.beforeMs.toFixed(0)} ms (${((r.ms.split.beforeMs / r.ms.split.ms) * 100).toFixed(0)}%)`,
    `${r.ms.split.importMs.toFixed(0)} ms (${((r.ms.split.importMs / r.ms.split.ms) * 100).toFixed(0)}%)`,
    `${r.ms.floor.toFixed(0)} ms`,
    `${r.ms.parse.toFixed(0)} ms`,
    `${r.ms.insert.toFixed(0)} ms`,
    fmtRatio(r.ms.split.importMs / r.ms.floor),
  ]);
  const memory = results.map((r) => {
    const { store, floor } = r.rss;
    return [
      mb(r.bytes),
      mb(store.baseline),
      mb(store.peak),
      mb(Math.max(0, store.peak - store.baseline)),
      mb(floor.peak),
      mb(Math.max(0, floor.peak - floor.baseline)),
    ];
  });
  const first = results[0];
  const last = results.at(-1);
  const growth = (r) => mbps(r.bytes, r.ms.store);
  return [
    "## Legacy import (`doctor --fix`)",
    "",
    "`runDoctorFix({ home, keepSources: true })` on a fresh copy of a legacy home (generated by",
    "test/fixtures/generate-legacy-home.mjs) holding one large transcript, a one-entry sessions.json,",
    "an empty cron jobs file and openclaw.json. The whole call is timed (plan: SHA-256 of every",
    "source, a transcript's lines counted, the other sources parsed; creating the databases; the",
    "import; ledger; `PRAGMA optimize`; close) **except the",
    "pre-migration backup**, replaced by a no-op here because bench/backup.mjs measures it. The copy",
    "of the home is made before the clock starts. MB/s = transcript file bytes (MB = 10^6 bytes) ÷",
    `wall time; median of ${ROUNDS} interleaved rounds after ${WARMUP} warm-up round.`,
    "",
    "Floors, on the same file in the same rounds, into a bare SQLite database on the run's engine in",
    "today's design (the layout before layout 2, its tables created by bench/today-layout.mjs) with",
    "the library's pragmas (WAL, synchronous=NORMAL), created before the clock starts and closed (WAL",
    "checkpointed) inside it:",
    `**read+parse+insert** = the file read in ${CHUNK_BYTES / 1024} KiB chunks and split into lines,`,
    "`JSON.parse` of every line, and one `transcript_events` row (session_id, seq, event_json,",
    `created_at) per line, ${BATCH} rows per transaction (the importer's batch size); no identity`,
    "rows, no FTS, no checks. event_json is the line's text, byte-identical to the store's",
    "re-encoding for these compact files (checked). **read+parse** = the same without the database;",
    "**insert** = the same rows, pre-read and pre-parsed, inserted the same way.",
    "**same rows** = read+parse+insert plus every other row today's design writes for an event: its",
    "`transcript_event_identities` row and its search text (`searchableText`, as the store) in",
    "`transcript_fts`, and the session's tail once per transaction; still no checks, no plan scan.",
    "It shows how much of the gap is the rows themselves and how much is the importer.",
    "**lean rows** = the same for the rows of the store's own layout, bare (bench/lean-layout.mjs,",
    "incremental auto-vacuum as the store's files): one row per event with its identity columns",
    "(keyed by an INTEGER session number; seq, event-id and idempotency indexes) and its search",
    "text as the store indexes it (`indexedText`) in a text-keeping FTS5 table, in bulk before each",
    "commit; no checks, no plan scan, the line stored as read. What the store's layout costs with",
    "no importer at all: `lean rows ÷ floor` is as high as the doctor's share could go.",
    "",
    "### Throughput",
    "",
    table(
      [
        "transcript",
        "events",
        "doctor MB/s",
        "floor read+parse+insert MB/s",
        "doctor ÷ floor",
        "same rows MB/s",
        "doctor ÷ same rows",
        "lean rows MB/s",
        "lean rows ÷ floor",
        "doctor ÷ lean rows",
        "read+parse only MB/s",
        "insert only MB/s",
        "target",
        "met?",
      ],
      throughput,
    ),
    "",
    results.length > 1
      ? `Growth: doctor at ${mb(last.bytes)} runs at ${fmtRatio(growth(last) / growth(first))} × its ` +
        `MB/s at ${mb(first.bytes)} (floor: ${fmtRatio(mbps(last.bytes, last.ms.floor) / mbps(first.bytes, first.ms.floor))} ×).`
      : "",
    "",
    "### Where the time goes (median ms)",
    "",
    "`before the transcript` = from the call to the transcript's start (plan: SHA-256 and a line",
    "count of the file; databases created; the small sources imported); `transcript",
    "import` = from there to the end (read+parse, the store's append of each event: its event row,",
    `the search index in bulk; ${BATCH} per transaction; ledger; \`PRAGMA optimize\`; close),`,
    "both from the store's median round; `import ÷ floor time` = that import part ÷ the floor's",
    "read+parse+insert time.",
    "",
    table(
      [
        "transcript",
        "doctor total",
        "before the transcript",
        "transcript import",
        "floor read+parse+insert",
        "read+parse only",
        "insert only",
        "import ÷ floor time",
      ],
      time,
    ),
    "",
    "### A home of many short sessions",
    "",
    `The same call on a home of ${fmtCount(many.files)} short transcripts of one agent (about ${MANY_EVENTS} events`,
    "each, and their sessions.json), against the same floors run over all the files, each file its",
    `own session, ${BATCH} rows per transaction whatever file they come from. The doctor imports short`,
    "transcripts of one agent in groups that share a transaction (src/doctor/import-groups.ts).",
    "Report only: the target is set on large transcripts.",
    "",
    table(
      [
        "files",
        "events",
        "MB",
        "doctor",
        "doctor MB/s",
        "floor read+parse+insert MB/s",
        "doctor ÷ floor",
        "same rows MB/s",
        "doctor ÷ same rows",
      ],
      [
        [
          fmtCount(many.files),
          fmtCount(many.events),
          mb(many.bytes),
          `${many.ms.store.toFixed(0)} ms`,
          mbps(many.bytes, many.ms.store).toFixed(1),
          mbps(many.bytes, many.ms.floor).toFixed(1),
          `${((many.ms.floor / many.ms.store) * 100).toFixed(0)}%`,
          mbps(many.bytes, many.ms.same).toFixed(1),
          `${((many.ms.same / many.ms.store) * 100).toFixed(0)}%`,
        ],
      ],
    ),
    "",
    "### Peak RSS",
    "",
    "Each measured once in a child process (`node bench/doctor.mjs --rss-child …`): baseline = RSS",
    "after loading the library, before the import; peak = `process.resourceUsage().maxRSS`;",
    "growth = peak − baseline.",
    "",
    table(
      [
        "transcript",
        "doctor baseline RSS",
        "doctor peak RSS",
        "doctor growth",
        "floor peak RSS",
        "floor growth",
      ],
      memory,
    ),
  ].join("\n");
}

export async function run() {
  return withTempDir("doctor", async (dir) => {
    const results = [];
    for (const sizeMb of SIZES_MB) results.push(await measureSize(dir, sizeMb));
    const many = await measureMany(dir);
    const targets = results.flatMap((r) => {
      const share = r.ms.floor / r.ms.store;
      const growth = Math.max(0, r.rss.store.peak - r.rss.store.baseline);
      return [
        {
          name: `doctor import ≥ ${TARGET_SHARE * 100}% of floor (read+parse+insert) MB/s at ${mb(r.bytes)}`,
          value:
            `${(share * 100).toFixed(0)}% (${mbps(r.bytes, r.ms.store).toFixed(1)} vs ` +
            `${mbps(r.bytes, r.ms.floor).toFixed(1)} MB/s; the lean design's bare rows: ` +
            `${((r.ms.floor / r.ms.lean) * 100).toFixed(0)}%)`,
          met: share >= TARGET_SHARE,
        },
        {
          name: `doctor import RSS growth < 64 MB at ${mb(r.bytes)}`,
          value: mb(growth),
          met: growth < TARGET_RSS_GROWTH,
        },
      ];
    });
    targets.push(
      ...walTargets(
        "doctor",
        results.map((r) => r.rss.store.catchUps),
      ),
    );
    return { name: "doctor", markdown: render(results, many), targets };
  });
}

if (process.argv[2] === "--rss-child") await rssChild(...process.argv.slice(3));
else await runIfMain(import.meta.url, run);
