// Session entry patch: SessionStore.patch of one ~2 KB entry (a counter and updatedAt) with 100,
// 10,000 and 100,000 entries in the store, against a bare UPDATE and the legacy sessions.json
// rewrite (read, parse, modify, pretty-print, write a temp file, fsync, rename).
import {
  closeSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { openStateHome } from "../dist/index.js";
import { makeSessionEntry, sessionKeyOf } from "./fixtures.mjs";
import {
  compare,
  fmtBytes,
  fmtCount,
  fmtRate,
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
  withTempDir,
} from "./lib.mjs";

const ENTRY_BYTES = 2048;
/** Above this the legacy file is not measured: V8 strings top out near 512 MB, and so would the gateway. */
const LEGACY_MAX_BYTES = 400 * 1024 * 1024;
const TARGET_SPEEDUP = 100;
const TARGET_SIZE = QUICK ? 2_000 : 10_000;
const FLAT_TOLERANCE = 2;

/** Per size: SQLite iterations per round, legacy iterations per round, and legacy rounds. */
const PLAN = QUICK
  ? [
      { size: 100, iterations: 300, rounds: 2, legacy: { iterations: 10, rounds: 2, warmup: 2 } },
      { size: 2_000, iterations: 300, rounds: 2, legacy: { iterations: 3, rounds: 2, warmup: 1 } },
    ]
  : [
      { size: 100, iterations: 2_000, rounds: 5, legacy: { iterations: 60, rounds: 5, warmup: 5 } },
      {
        size: 10_000,
        iterations: 2_000,
        rounds: 5,
        legacy: { iterations: 8, rounds: 5, warmup: 1 },
      },
      {
        size: 100_000,
        iterations: 2_000,
        rounds: 5,
        legacy: { iterations: 3, rounds: 1, warmup: 0 },
      },
    ];

const bump = (entry) => ({ ...entry, totalTokens: entry.totalTokens + 1, updatedAt: Date.now() });

/** The legacy way: the whole sessions.json is read, parsed, changed, re-written and renamed. */
function legacyPatch(file, key, { fsync }) {
  const store = JSON.parse(readFileSync(file, "utf8"));
  store[key] = bump(store[key]);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, JSON.stringify(store, null, 2));
    if (fsync) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

function seed(dir, size) {
  const rand = prng(size);
  const entries = Array.from({ length: size }, (_, i) => makeSessionEntry(i, rand, ENTRY_BYTES));
  const home = openStateHome({ home: join(dir, "home") });
  const agent = home.agent("bench");
  agent.db.tx(() => {
    entries.forEach((entry, i) => {
      agent.sessions.upsert(sessionKeyOf(i), entry);
    });
  });
  const floorDb = openBareDb(join(dir, "floor.sqlite"), { schema: true });
  const insert = floorDb.prepare(
    "INSERT INTO session_entries (session_key, entry_json, version, updated_at) VALUES (?, ?, 1, ?)",
  );
  floorDb.transaction(() => {
    entries.forEach((entry, i) => {
      insert.run(sessionKeyOf(i), JSON.stringify(entry), entry.updatedAt);
    });
  })();
  const legacyFile = join(dir, "sessions.json");
  const legacyObject = Object.fromEntries(entries.map((entry, i) => [sessionKeyOf(i), entry]));
  const text = JSON.stringify(legacyObject, null, 2);
  const fd = openSync(legacyFile, "w");
  writeSync(fd, text);
  closeSync(fd);
  return { home, agent, floorDb, legacyFile, template: JSON.stringify(entries[0]) };
}

async function measureSize(plan) {
  const { size } = plan;
  return withTempDir("patch", (dir) => {
    progress(`patch: seeding ${fmtCount(size)} entries (store, floor, sessions.json)`);
    const { home, agent, floorDb, legacyFile, template } = seed(dir, size);
    const legacyBytes = statSync(legacyFile).size;
    const rand = prng(99);
    const randomKey = () => sessionKeyOf(Math.floor(rand() * size));
    const update = floorDb.prepare(
      "UPDATE session_entries SET entry_json = ?, version = version + 1, updated_at = ? WHERE session_key = ?",
    );
    const sqlite = { iterations: plan.iterations, rounds: plan.rounds, warmup: 200 };
    const cases = {
      store: { ...sqlite, fn: () => agent.sessions.patch(randomKey(), bump) },
      floor: { ...sqlite, fn: () => update.run(template, Date.now(), randomKey()) },
    };
    const legacyMeasured = legacyBytes <= LEGACY_MAX_BYTES;
    if (legacyMeasured) {
      cases.legacy = {
        ...plan.legacy,
        fn: () => legacyPatch(legacyFile, randomKey(), { fsync: true }),
      };
      cases.legacyNoFsync = {
        ...plan.legacy,
        fn: () => legacyPatch(legacyFile, randomKey(), { fsync: false }),
      };
    }
    progress(
      `patch: ${fmtCount(size)} entries, measuring (legacy file ${fmtBytes(legacyBytes)}` +
        `${legacyMeasured ? `, ${plan.legacy.iterations * plan.legacy.rounds} legacy rewrites` : ", legacy skipped"})`,
    );
    const result = compare(cases);
    const dbBytes = statSync(agent.db.path).size;
    const walBytes = statSync(`${agent.db.path}-wal`).size;
    home.close();
    floorDb.close();
    return { size, legacyBytes, dbBytes, walBytes, legacyMeasured, plan, ...result };
  });
}

export async function run() {
  const results = [];
  for (const plan of PLAN) results.push(await measureSize(plan));
  const p50s = results.map((r) => r.store.p50);
  const flat = Math.max(...p50s) / Math.min(...p50s);
  const rows = results.map((r) => {
    const speedup = r.legacy ? r.store.opsPerSec / r.legacy.opsPerSec : undefined;
    const isTarget = r.size === TARGET_SIZE;
    return [
      fmtCount(r.size),
      fmtRate(r.store.opsPerSec),
      `${fmtUs(r.store.p50)} / ${fmtUs(r.store.p99)} / ${fmtUs(r.store.max)}`,
      fmtRate(r.floor.opsPerSec),
      fmtUs(r.floor.p50),
      fmtRatio(r.store.opsPerSec / r.floor.opsPerSec),
      r.legacy
        ? `${fmtRate(r.legacy.opsPerSec)} (p50 ${fmtUs(r.legacy.p50)}, n=${r.legacy.n})`
        : "skipped",
      r.legacyNoFsync ? fmtUs(r.legacyNoFsync.p50) : "–",
      fmtSpeedup(speedup),
      isTarget
        ? `≥ ${TARGET_SPEEDUP}× faster than legacy`
        : `p50 flat (≤ ${FLAT_TOLERANCE}× spread)`,
      isTarget ? met(speedup >= TARGET_SPEEDUP) : met(flat <= FLAT_TOLERANCE),
    ];
  });
  const sizes = results
    .map(
      (r) =>
        `${fmtCount(r.size)} entries: sessions.json ${fmtBytes(r.legacyBytes)}, agent.sqlite ${fmtBytes(r.dbBytes)} (${fmtBytes(r.dbBytes / r.size)} per entry) + WAL ${fmtBytes(r.walBytes)}`,
    )
    .join("; ");
  const atTarget = results.find((r) => r.size === TARGET_SIZE);
  const targets = [
    {
      name: `patch ≥ ${TARGET_SPEEDUP}× faster than legacy sessions.json at ${fmtCount(TARGET_SIZE)} entries`,
      value: atTarget?.legacy
        ? `${fmtRatio(atTarget.store.opsPerSec / atTarget.legacy.opsPerSec)}×`
        : "not measured",
      met:
        Boolean(atTarget?.legacy) &&
        atTarget.store.opsPerSec / atTarget.legacy.opsPerSec >= TARGET_SPEEDUP,
    },
    {
      name: `patch p50 flat from ${fmtCount(results[0].size)} to ${fmtCount(results.at(-1).size)} entries`,
      value: `${fmtRatio(flat)}× spread`,
      met: flat <= FLAT_TOLERANCE,
    },
  ];
  const markdown = [
    "## Session entry patch",
    "",
    `\`sessions.patch(key, (e) => ({ ...e, totalTokens: e.totalTokens + 1, updatedAt: Date.now() }))\` on a`,
    `random existing key; entries are ~${fmtBytes(ENTRY_BYTES)} of compact JSON (sessions.json-shaped).`,
    "**Floor** = bare `UPDATE session_entries SET entry_json = ?, version = version + 1, updated_at = ?",
    "WHERE session_key = ?` in autocommit, pre-encoded JSON, same schema and pragmas. `store ÷ floor` =",
    "store ops/s ÷ floor ops/s. **Legacy** = the sessions.json way: `readFileSync` + `JSON.parse` of",
    "the whole file, change one entry, `JSON.stringify(…, null, 2)`, write a temp file, `fsync`,",
    "`rename` (n = rewrites measured; the p50 without the fsync is shown to separate disk from CPU).",
    `Legacy is skipped above ${fmtBytes(LEGACY_MAX_BYTES)} of file. Sizes: ${sizes}.`,
    "",
    table(
      [
        "entries",
        "store ops/s",
        "store p50 / p99 / max",
        "floor ops/s",
        "floor p50",
        "store ÷ floor",
        "legacy ops/s",
        "legacy p50 w/o fsync",
        "vs legacy",
        "target",
        "met?",
      ],
      rows,
    ),
    "",
    `Growth: store p50 spread across sizes = ${fmtRatio(flat)}× (max p50 ÷ min p50).`,
  ].join("\n");
  return { name: "patch", markdown, targets };
}

await runIfMain(import.meta.url, run);
