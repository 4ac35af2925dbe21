// Transcript append throughput: TranscriptStore.append (one event per transaction, with an
// idempotency key, parent from the current leaf, FTS indexing) and appendMany (100 per
// transaction), against bare SQLite on the run's engine inserts of the same rows and the legacy JSONL append.
import { appendFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStateHome } from "../dist/index.js";
import { eventFactory, makeVocabulary } from "./fixtures.mjs";
import {
  compare,
  fmtCount,
  fmtRate,
  fmtRatio,
  fmtSpeedup,
  fmtUs,
  met,
  openBareDb,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const SIZES = QUICK ? [100, 2_000] : [100, 10_000, 100_000];
const SINGLE = QUICK
  ? { warmup: 100, iterations: 300, rounds: 2 }
  : { warmup: 300, iterations: 2_000, rounds: 5 };
const BATCH = QUICK
  ? { warmup: 2, iterations: 5, rounds: 2 }
  : { warmup: 5, iterations: 30, rounds: 5 };
const BATCH_SIZE = 100;
const SESSION_LENGTH = 200;
const TARGET_SHARE = 0.5;

/** The event as the store materializes it (id, parentId, timestamp first), and its search text. */
function materialize(input, id, parentId) {
  const { type, ...rest } = input;
  const event = { type, id, parentId, timestamp: new Date().toISOString(), ...rest };
  const text = input.message.content
    .map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? b.name : ""))
    .filter(Boolean)
    .join("\n");
  return { json: JSON.stringify(event), text };
}

/** The bare statements of the floors, over a database made from the library's schema files. */
function prepareFloor(db) {
  const stmt = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    session: db.prepare(
      "INSERT INTO sessions (session_id, created_at, updated_at) VALUES (?, ?, ?)",
    ),
    event: db.prepare(
      "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
    ),
    identity: db.prepare(
      `INSERT INTO transcript_event_identities
         (session_id, event_id, seq, event_type, has_parent, parent_id, message_idempotency_key, created_at)
       VALUES (?, ?, ?, 'message', 1, ?, ?, ?)`,
    ),
    text: db.prepare("INSERT INTO transcript_fts (rowid, text) VALUES (?, ?)"),
    tail: db.prepare(
      "UPDATE sessions SET last_seq = ?, leaf_event_id = ?, updated_at = max(updated_at, ?) WHERE session_id = ?",
    ),
  };
  /**
   * Inserts one event at `stage` A (event row), B (+ identity), C (+ FTS text, session tail), or
   * F (B + FTS text, no tail; only for the page count).
   */
  const write = (stage, sessionId, seq, row) => {
    const now = Date.now();
    const rowid = stmt.event.run(sessionId, seq, row.json, now).lastInsertRowid;
    if (stage === "A") return;
    stmt.identity.run(sessionId, `e${seq}`, seq, `e${seq - 1}`, `k${seq}`, now);
    if (stage === "B") return;
    if (row.text !== "") stmt.text.run(rowid, row.text);
    if (stage === "F") return;
    stmt.tail.run(seq, `e${seq}`, now, sessionId);
  };
  return { stmt, write };
}

/** A writer that appends to its own session at one stage, one event per transaction or a batch. */
function floorWriter(floor, stage, sessionId, rows) {
  floor.stmt.session.run(sessionId, 0, 0);
  let seq = 0;
  return {
    one: () => {
      seq++;
      floor.stmt.begin.run();
      floor.write(stage, sessionId, seq, rows[seq % rows.length]);
      floor.stmt.commit.run();
    },
    batch: () => {
      floor.stmt.begin.run();
      for (let i = 0; i < BATCH_SIZE; i++) {
        seq++;
        floor.write(stage, sessionId, seq, rows[seq % rows.length]);
      }
      floor.stmt.commit.run();
    },
  };
}

function seedStore(agent, next, size) {
  let sessionNo = 0;
  for (let done = 0; done < size; ) {
    const sessionId = `seed-${sessionNo++}`;
    for (let n = 0; n < SESSION_LENGTH && done < size; n += BATCH_SIZE) {
      const count = Math.min(BATCH_SIZE, size - done);
      agent.transcripts.appendMany(sessionId, Array.from({ length: count }, next));
      done += count;
    }
  }
}

function seedFloor(floor, rows, size) {
  floor.stmt.begin.run();
  for (let i = 0; i < size; i++) {
    const seq = (i % SESSION_LENGTH) + 1;
    const sessionId = `seed-${Math.floor(i / SESSION_LENGTH)}`;
    if (seq === 1) floor.stmt.session.run(sessionId, 0, 0);
    floor.write("C", sessionId, seq, rows[i % rows.length]);
  }
  floor.stmt.commit.run();
}

async function measureSize(size, vocab) {
  return withTempDir("append", (dir) => {
    const next = eventFactory(vocab, 1000 + size);
    const inputs = Array.from({ length: 4_000 }, next);
    const rows = inputs.map((input, i) => materialize(input, `e${i}`, `e${i - 1}`));

    progress(`append: seeding ${fmtCount(size)} events (store, floor, legacy)`);
    const home = openStateHome({ home: join(dir, "home") });
    const agent = home.agent("bench");
    seedStore(agent, next, size);
    const floorDb = openBareDb(join(dir, "floor.sqlite"), { schema: true });
    const floor = prepareFloor(floorDb);
    seedFloor(floor, rows, size);
    const legacyFile = join(dir, "legacy.jsonl");
    writeFileSync(legacyFile, "");
    for (let i = 0; i < size; i += 1000) {
      const count = Math.min(1000, size - i);
      appendFileSync(
        legacyFile,
        rows
          .slice(0, count)
          .map((r) => `${r.json}\n`)
          .join(""),
      );
    }

    // Legacy: the writer stringifies the event and appends its line, one call per event.
    let legacySeq = 0;
    const legacyLine = (input) => {
      legacySeq++;
      const event = { type: input.type, id: `l${legacySeq}`, parentId: `l${legacySeq - 1}` };
      Object.assign(event, { timestamp: new Date().toISOString() }, input);
      return `${JSON.stringify(event)}\n`;
    };
    const pick = (i) => inputs[i % inputs.length];

    progress(`append: ${fmtCount(size)} rows, one event per transaction`);
    const single = {
      A: floorWriter(floor, "A", "floor-a", rows),
      B: floorWriter(floor, "B", "floor-b", rows),
      C: floorWriter(floor, "C", "floor-c", rows),
    };
    let key = 0;
    const one = compare(
      {
        store: {
          ...SINGLE,
          fn: (i) => agent.transcripts.append("live", pick(i), { idempotencyKey: `key-${key++}` }),
        },
        floorA: { ...SINGLE, fn: single.A.one },
        floorB: { ...SINGLE, fn: single.B.one },
        floorC: { ...SINGLE, fn: single.C.one },
        legacy: { ...SINGLE, fn: (i) => appendFileSync(legacyFile, legacyLine(pick(i))) },
      },
      { rounds: SINGLE.rounds },
    );

    progress(`append: ${fmtCount(size)} rows, appendMany batches of ${BATCH_SIZE}`);
    const batched = {
      A: floorWriter(floor, "A", "floor-a-batch", rows),
      B: floorWriter(floor, "B", "floor-b-batch", rows),
      C: floorWriter(floor, "C", "floor-c-batch", rows),
    };
    const batchOf = (i) => Array.from({ length: BATCH_SIZE }, (_, k) => pick(i * BATCH_SIZE + k));
    const batchOpts = { ...BATCH, opsPerCall: BATCH_SIZE };
    const many = compare(
      {
        store: { ...batchOpts, fn: (i) => agent.transcripts.appendMany("live-batch", batchOf(i)) },
        floorA: { ...batchOpts, fn: batched.A.batch },
        floorB: { ...batchOpts, fn: batched.B.batch },
        floorC: { ...batchOpts, fn: batched.C.batch },
        legacy: {
          ...batchOpts,
          fn: (i) => appendFileSync(legacyFile, batchOf(i).map(legacyLine).join("")),
        },
      },
      { rounds: BATCH.rounds },
    );
    home.close();
    floorDb.close();
    return { size, one, many };
  });
}

/**
 * Where the time goes: the pages each commit appends to the WAL (auto-checkpoint off while
 * counting, so every commit's frames stay). A small commit's cost grows with the distinct B-tree
 * pages it dirties, each written whole.
 */
function walPages(vocab) {
  return withTempDir("append-wal", (dir) => {
    const seeded = 1_000;
    const count = QUICK ? 100 : 500;
    const next = eventFactory(vocab, 77);
    const inputs = Array.from({ length: count * 2 }, next);
    const rows = inputs.map((input, i) => materialize(input, `e${i}`, `e${i - 1}`));
    const home = openStateHome({ home: join(dir, "home") });
    const agent = home.agent("bench");
    seedStore(agent, next, seeded);
    const floorDb = openBareDb(join(dir, "floor.sqlite"), { schema: true });
    const floor = prepareFloor(floorDb);
    seedFloor(floor, rows, seeded);
    const pageSize = floorDb.pragma("page_size", { simple: true });
    agent.db.exec("PRAGMA wal_autocheckpoint = 0");
    floorDb.pragma("wal_autocheckpoint = 0");
    const perEvent = (db, path, calls, eventsPerCall, fn) => {
      if (db === agent.db) db.checkpoint("TRUNCATE");
      else floorDb.pragma("wal_checkpoint(TRUNCATE)");
      for (let i = 0; i < calls; i++) fn(i);
      return (statSync(`${path}-wal`).size - 32) / (pageSize + 24) / (calls * eventsPerCall);
    };
    const batches = count / BATCH_SIZE;
    const result = {
      "floor A (event row)": perEvent(
        floorDb,
        floorDb.name,
        count,
        1,
        floorWriter(floor, "A", "wa", rows).one,
      ),
      "floor B (+ identity row)": perEvent(
        floorDb,
        floorDb.name,
        count,
        1,
        floorWriter(floor, "B", "wb", rows).one,
      ),
      "floor B + FTS row": perEvent(
        floorDb,
        floorDb.name,
        count,
        1,
        floorWriter(floor, "F", "wf", rows).one,
      ),
      "floor C (B + FTS row + session tail update)": perEvent(
        floorDb,
        floorDb.name,
        count,
        1,
        floorWriter(floor, "C", "wc", rows).one,
      ),
      "store append": perEvent(agent.db, agent.db.path, count, 1, (i) =>
        agent.transcripts.append("w", inputs[i], { idempotencyKey: `w-${i}` }),
      ),
      [`floor C, ${BATCH_SIZE} per transaction`]: perEvent(
        floorDb,
        floorDb.name,
        batches,
        BATCH_SIZE,
        floorWriter(floor, "C", "wcb", rows).batch,
      ),
      [`store appendMany, ${BATCH_SIZE} per transaction`]: perEvent(
        agent.db,
        agent.db.path,
        batches,
        BATCH_SIZE,
        (i) =>
          agent.transcripts.appendMany("wm", inputs.slice(i * BATCH_SIZE, (i + 1) * BATCH_SIZE)),
      ),
    };
    home.close();
    floorDb.close();
    return { pageSize, result };
  });
}

const LEAN_SCHEMA = `
  CREATE TABLE lean_events (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL,
    event_type TEXT NOT NULL, parent_id TEXT, idempotency_key TEXT, event_json TEXT NOT NULL,
    created_at INTEGER NOT NULL, UNIQUE (session_id, seq)
  ) STRICT;
  CREATE UNIQUE INDEX lean_events_id ON lean_events (session_id, event_id);
  CREATE UNIQUE INDEX lean_events_key ON lean_events (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;`;

/**
 * How close a leaner design could get to floor A: the identity folded into the event row (one
 * table, an event-id and an idempotency index beside the seq one), the search text indexed every
 * \`ftsEvery\` events instead of in each event's transaction, the session tail optional. Bare SQL,
 * random 8-hex ids as the store makes, one transaction per event, interleaved with floor A.
 */
function leanBound(vocab) {
  return withTempDir("append-lean", (dir) => {
    const size = QUICK ? 2_000 : 10_000;
    const next = eventFactory(vocab, 99);
    const rows = Array.from({ length: 4_000 }, next).map((input, i) =>
      materialize(input, `e${i}`, `e${i - 1}`),
    );
    const db = openBareDb(join(dir, "lean.sqlite"), { schema: true });
    db.exec(LEAN_SCHEMA);
    const floor = prepareFloor(db);
    seedFloor(floor, rows, size);
    const insert = db.prepare(
      `INSERT INTO lean_events (session_id, seq, event_id, event_type, parent_id, idempotency_key, event_json, created_at)
       VALUES (?, ?, ?, 'message', ?, ?, ?, ?)`,
    );
    const byKey = db.prepare(
      "SELECT id FROM lean_events WHERE session_id = ? AND idempotency_key = ?",
    );
    const session = db.prepare("SELECT last_seq, leaf_event_id FROM sessions WHERE session_id = ?");
    let seeded = 0;
    const hex = () =>
      Math.floor(Math.random() * 2 ** 32)
        .toString(16)
        .padStart(8, "0");
    db.exec("BEGIN");
    for (; seeded < size; seeded++) {
      const r = rows[seeded % rows.length];
      insert.run("seed", seeded + 1, hex(), null, null, r.json, 0);
    }
    db.exec("COMMIT");
    const writer = (sessionId, { ftsEvery, tail }) => {
      floor.stmt.session.run(sessionId, 0, 0);
      let seq = 0;
      let leaf = null;
      const pending = [];
      return (i) => {
        seq++;
        const r = rows[i % rows.length];
        const key = `${sessionId}-${seq}`;
        floor.stmt.begin.run();
        session.get(sessionId);
        byKey.get(sessionId, key);
        const id = hex();
        const rowid = insert.run(sessionId, seq, id, leaf, key, r.json, Date.now()).lastInsertRowid;
        leaf = id;
        pending.push([rowid, r.text]);
        if (pending.length >= ftsEvery) {
          for (const [docid, text] of pending) if (text !== "") floor.stmt.text.run(docid, text);
          pending.length = 0;
        }
        if (tail) floor.stmt.tail.run(seq, id, Date.now(), sessionId);
        floor.stmt.commit.run();
      };
    };
    const cases = {
      "floor A (event row)": floorWriter(floor, "A", "lean-a", rows).one,
      "lean, FTS in each transaction, tail": writer("lean-1", { ftsEvery: 1, tail: true }),
      "lean, FTS every 64 events, tail": writer("lean-64", { ftsEvery: 64, tail: true }),
      "lean, FTS every 64 events, no tail": writer("lean-64n", { ftsEvery: 64, tail: false }),
    };
    const measured = compare(
      Object.fromEntries(Object.entries(cases).map(([name, fn]) => [name, { ...SINGLE, fn }])),
      { rounds: SINGLE.rounds },
    );
    db.close();
    const floorRate = measured["floor A (event row)"].opsPerSec;
    return {
      size,
      rows: Object.entries(measured).map(([name, m]) => [
        name,
        fmtRate(m.opsPerSec),
        fmtRatio(m.opsPerSec / floorRate),
      ]),
    };
  });
}

function row(result, withLatency) {
  const { size, store, floorA, floorB, floorC, legacy } = result;
  const shareA = store.opsPerSec / floorA.opsPerSec;
  return [
    fmtCount(size),
    fmtRate(store.opsPerSec),
    withLatency ? `${fmtUs(store.p50)} / ${fmtUs(store.p99)}` : fmtUs(store.p50),
    fmtRate(floorA.opsPerSec),
    fmtRatio(shareA),
    fmtRate(floorB.opsPerSec),
    fmtRatio(store.opsPerSec / floorB.opsPerSec),
    fmtRate(floorC.opsPerSec),
    fmtRatio(store.opsPerSec / floorC.opsPerSec),
    fmtRate(legacy.opsPerSec),
    fmtSpeedup(store.opsPerSec / legacy.opsPerSec),
    `≥ ${TARGET_SHARE} × floor A`,
    met(shareA >= TARGET_SHARE),
  ];
}

export async function run() {
  const vocab = makeVocabulary();
  const results = [];
  for (const size of SIZES) results.push(await measureSize(size, vocab));
  progress("append: counting WAL pages per commit");
  const wal = await walPages(vocab);
  progress("append: the lean-schema bound");
  const lean = await leanBound(vocab);

  const headers = (latency) => [
    "rows before",
    "store ev/s",
    latency,
    "floor A ev/s",
    "store ÷ A",
    "floor B ev/s",
    "store ÷ B",
    "floor C ev/s",
    "store ÷ C",
    "legacy ev/s",
    "vs legacy",
    "target",
    "met?",
  ];
  const singles = results.map((r) => ({ size: r.size, ...r.one }));
  const batches = results.map((r) => ({ size: r.size, ...r.many }));
  const first = singles[0].store.opsPerSec;
  const last = singles.at(-1).store.opsPerSec;
  // Floor A is the event row alone; floor C makes every write the contract requires of append
  // (identity row, FTS kept in step, session tail), bare. Both are reported.
  const targets = singles.flatMap((r) => [
    {
      name: `append ≥ 50% of floor A's events/s at ${fmtCount(r.size)} rows`,
      value: `${fmtRatio(r.store.opsPerSec / r.floorA.opsPerSec)} × floor A`,
      met: r.store.opsPerSec / r.floorA.opsPerSec >= TARGET_SHARE,
    },
    {
      name: `append ≥ 50% of floor C's events/s (the same rows, bare) at ${fmtCount(r.size)} rows`,
      value: `${fmtRatio(r.store.opsPerSec / r.floorC.opsPerSec)} × floor C`,
      met: r.store.opsPerSec / r.floorC.opsPerSec >= TARGET_SHARE,
    },
  ]);
  const markdown = [
    "## Transcript append",
    "",
    "`transcripts.append(sessionId, event, { idempotencyKey })`: one event per transaction, parent",
    "taken from the session's current leaf, identity row, FTS text, session tail update.",
    "Floors are bare SQLite on the run's engine on a database built from the same schema files, with the same",
    "pragmas (WAL, synchronous=NORMAL), one `BEGIN IMMEDIATE … COMMIT` per event, JSON pre-encoded:",
    "**A** = the `transcript_events` row only; **B** = A + the `transcript_event_identities` row;",
    "**C** = B + the `transcript_fts` row + the `sessions` tail update (every write the store makes).",
    "**Legacy** = `JSON.stringify` + `fs.appendFileSync` of the line to a `.jsonl` file, one call per",
    "event (no fsync, as the legacy writer). `store ÷ X` = store events/s ÷ X events/s (1.00 = as fast).",
    "“rows before” = events already in the database (and lines in the legacy file).",
    "",
    "### One event per transaction",
    "",
    table(
      headers("store p50 / p99"),
      singles.map((r) => row(r, true)),
    ),
    "",
    `### appendMany, ${BATCH_SIZE} events per transaction`,
    "",
    "Floors and legacy batched the same way (100 rows per transaction; 100 lines per",
    "`appendFileSync`). Latency is per batch of 100.",
    "",
    table(
      headers("p50 per batch"),
      batches.map((r) => row(r, false)),
    ),
    "",
    `Growth: one-event append at ${fmtCount(singles.at(-1).size)} rows runs at ` +
      `${fmtRatio(last / first)} × its rate at ${fmtCount(singles[0].size)} rows ` +
      `(floor C: ${fmtRatio(singles.at(-1).floorC.opsPerSec / singles[0].floorC.opsPerSec)} ×).`,
    "",
    `### Where the time goes: WAL pages written per event (${wal.pageSize}-byte pages)`,
    "",
    "Counted with auto-checkpoint off on a 1,000-event database: each commit appends every page it",
    "dirtied to the WAL, whole, and the checkpoint later copies (and fsyncs) them into the database.",
    "",
    table(
      ["write", "WAL pages per event"],
      Object.entries(wal.result).map(([name, pages]) => [name, pages.toFixed(2)]),
    ),
    "",
    "### What floor A would take: a leaner design, bare",
    "",
    "The same one-event transactions in bare SQL on a leaner design than the store's, with the",
    "idempotency lookup and the session read kept: the identity folded into the event row (one",
    "table with a seq, an event-id and an idempotency index), random 8-hex ids as the store makes,",
    "the search text indexed in the same transaction or only every 64 events (search would then",
    `lag), and with or without the session tail update; ${fmtCount(lean.size)} events before,`,
    "interleaved with floor A. It shows how much of the gap to floor A the store's tables, the",
    "search index kept in step and the tail update each account for.",
    "",
    table(["write", "ev/s", "÷ floor A"], lean.rows),
  ].join("\n");
  return { name: "append", markdown, targets };
}

await runIfMain(import.meta.url, run);
