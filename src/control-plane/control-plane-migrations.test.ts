import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import {
  MigrationLedgerStore,
  type NewMigrationSource,
} from "../stores/global/migration-ledger-store.js";
import {
  MigrationQuarantineStore,
  type NewQuarantinedLine,
} from "../stores/global/migration-quarantine-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneMigrations } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same, storedRows } from "./test-support/parity.js";

// The migration ledger (runs, sources, quarantined lines) on every backend: each test runs on the
// embedded SQLite control plane and on a real PostgreSQL, with MigrationLedgerStore and
// MigrationQuarantineStore on their own SQLite database as the oracle of parity (adapted below to
// the control plane's method names), and rows read back through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

/** The two SQLite stores under the control plane's names: the oracle. */
function oracle(db: Database, clock: () => number): ControlPlaneMigrations {
  const ledger = new MigrationLedgerStore(db, { clock });
  const quarantine = new MigrationQuarantineStore(db, { clock });
  return {
    runs: {
      start: async (id, report) => ledger.startRun(id, report),
      finish: async (id, status, report) => ledger.finishRun(id, status, report),
      get: async (id) => ledger.getRun(id),
      list: async (limit) => ledger.listRuns(limit),
      running: async () => ledger.runningRuns(),
    },
    sources: {
      find: async (key) => ledger.findSource(key),
      record: async (source) => ledger.recordSource(source),
      atPath: async (path) => ledger.sourcesAtPath(path),
      markRemoved: async (key) => ledger.markRemoved(key),
      ofRun: async (runId) => ledger.sourcesOfRun(runId),
    },
    quarantine: {
      add: async (entry, now) => quarantine.add(entry, now),
      list: async (options) => quarantine.list(options),
      countsByRun: async () => quarantine.countsByRun(),
    },
  };
}

const TABLES = {
  migration_runs: {
    order: "id",
    bigints: ["started_at", "finished_at", "owner_pid", "owner_started"],
  },
  migration_sources: {
    order: "source_key",
    bigints: ["source_size_bytes", "source_record_count", "imported_at"],
  },
  migration_quarantine: {
    order: "source_path, line_number, line_sha256",
    bigints: ["line_number", "quarantined_at"],
  },
};

async function sameRows(backend: Backend, where: string, db: Database) {
  for (const [table, { order, bigints }] of Object.entries(TABLES)) {
    const sql = `SELECT * FROM ${table} ORDER BY ${order}`;
    const bytes = table === "migration_quarantine" ? ["line_bytes"] : [];
    const oracleRows = (db.prepare(sql).all() as Record<string, unknown>[]).map((row) => {
      const out = { ...row };
      for (const c of bytes) out[c] = Buffer.from(row[c] as Uint8Array).toString("hex");
      return out;
    });
    expect(await storedRows(backend, where, sql, { bigints, bytes }), table).toEqual(oracleRows);
  }
}

const source = (key: string, extra: Partial<NewMigrationSource> = {}): NewMigrationSource => ({
  sourceKey: key,
  kind: "transcript",
  path: "agents/main/sessions/s1.jsonl",
  targetTable: "agent.transcript_events",
  sha256: `sha-${key}`,
  sizeBytes: 1234,
  recordCount: 12,
  lastRunId: "m1",
  status: "imported",
  importedAt: 1_770_000_000_000,
  report: { lines: 12, "ü😀": [1, null] },
  ...extra,
});

const line = (n: number, bytes: string, extra: Partial<NewQuarantinedLine> = {}) => ({
  path: "agents/main/sessions/s1.jsonl",
  line: n,
  kind: "transcript",
  sourceSha256: "sha-file",
  reason: "Unexpected token } in JSON",
  bytes: Buffer.from(bytes, "latin1"),
  runId: "m1",
  ...extra,
});

describe.each(BACKENDS)("control plane on %s: migration ledger", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const db = openDb();
    return { ...opened, m: opened.cp.migrations, store: oracle(db, clock.now), clock, db };
  };

  it("starts, finishes, gets and lists runs exactly as MigrationLedgerStore does", async () => {
    const { m, store, clock, db, where } = await setup();
    await same(m, store, (s) => s.runs.start("m2", { plan: { sources: 3 } }));
    clock.advance(5);
    await same(m, store, (s) => s.runs.start("m1"));
    await same(m, store, (s) => s.runs.start("m3", { note: "é" }));
    await same(m, store, (s) => s.runs.running());
    clock.advance(100);
    await same(m, store, (s) => s.runs.finish("m2", "partial", { problems: ["x"] }));
    await same(m, store, (s) => s.runs.finish("m2", "succeeded", {}));
    await same(m, store, (s) => s.runs.finish("m3", "interrupted", { interrupted: "died" }));
    await same(m, store, (s) => s.runs.finish("nope", "failed", {}));
    for (const id of ["m1", "m2", "nope"]) await same(m, store, (s) => s.runs.get(id));
    for (const limit of [undefined, 1, 2, 10_000]) await same(m, store, (s) => s.runs.list(limit));
    await same(m, store, (s) => s.runs.running());
    await sameRows(backend, where, db);
  });

  it("records, finds, lists and marks sources exactly as MigrationLedgerStore does", async () => {
    const { m, store, clock, db, where } = await setup();
    await same(m, store, (s) => s.runs.start("m1"));
    await same(m, store, (s) => s.runs.start("m2"));
    const sources = [
      source("k2"),
      source("k1", { importedAt: 1_770_000_000_000 }),
      source("k3", { importedAt: null, status: "failed" }),
      source("k4", { path: "agents/B/x.jsonl", lastRunId: null, removedSource: true }),
      source("k5", { path: "agents/a/x.jsonl", lastRunId: "m2", status: "warning" }),
    ];
    for (const s of sources) await same(m, store, (x) => x.sources.record(s));
    clock.advance(1);
    await same(m, store, (x) =>
      x.sources.record(source("k2", { lastRunId: "m2", recordCount: 3 })),
    );
    await same(m, store, (x) => x.sources.markRemoved("k1"));
    await same(m, store, (x) => x.sources.markRemoved("missing"));
    for (const key of ["k1", "k2", "k4", "none"]) await same(m, store, (x) => x.sources.find(key));
    for (const path of ["agents/main/sessions/s1.jsonl", "agents/a/x.jsonl", "nowhere"]) {
      await same(m, store, (x) => x.sources.atPath(path));
    }
    for (const run of ["m1", "m2", "m9"]) await same(m, store, (x) => x.sources.ofRun(run));
    await sameRows(backend, where, db);
  });

  it("quarantines lines as bytes, once each, exactly as MigrationQuarantineStore does", async () => {
    const { m, store, clock, db, where } = await setup();
    await same(m, store, (s) => s.runs.start("m1"));
    await same(m, store, (s) => s.runs.start("m0"));
    const lines = [
      line(7, "{bad"),
      line(7, "{bad"),
      line(7, "{other \xff\x00 bytes"),
      line(2, ""),
      line(3, "x", { path: "agents/B/y.jsonl", runId: "m0" }),
      line(1, "z", { path: "agents/a/y.jsonl" }),
    ];
    for (const l of lines) {
      clock.advance(1);
      await same(m, store, (s) => s.quarantine.add(l));
    }
    await same(m, store, (s) => s.quarantine.add(line(9, "late"), 42));
    await same(m, store, (s) => s.quarantine.list());
    await same(m, store, (s) => s.quarantine.list({ runId: "m0" }));
    await same(m, store, (s) => s.quarantine.list({ runId: "m1", limit: 2 }));
    await same(m, store, (s) => s.quarantine.list({ runId: "none" }));
    const counts = await same(m, store, (s) => s.quarantine.countsByRun());
    expect(counts).toEqual({
      ok: new Map([
        ["m0", 1],
        ["m1", 5],
      ]),
    });
    await sameRows(backend, where, db);
  });

  it("refuses the arguments the SQLite stores refuse, with the same code and message", async () => {
    const { m, store, db, where } = await setup();
    await same(m, store, (s) => s.runs.start("m1"));
    const refused: ((s: ControlPlaneMigrations) => unknown)[] = [
      (s) => s.runs.start("m1"),
      (s) => s.runs.start(""),
      (s) => s.runs.start(5 as never),
      (s) => s.runs.start("x", (() => 1) as never),
      (s) => s.runs.start("y", { n: 1n } as never),
      (s) => s.runs.finish("m1", "running" as never, {}),
      (s) => s.runs.finish("m1", "done" as never, {}),
      (s) => s.runs.finish("nope", "failed", {}),
      (s) => s.runs.get("nope"),
      (s) => s.runs.get("" as never),
      (s) => s.runs.list(0),
      (s) => s.runs.list(-1),
      (s) => s.runs.list(1.5),
      (s) => s.sources.record(source("k", { lastRunId: "m9" })),
      (s) => s.sources.record(source("k", { status: "done" as never })),
      (s) => s.sources.record(source("k", { sizeBytes: -1 })),
      (s) => s.sources.record(source("k", { recordCount: 1.5 })),
      (s) => s.sources.record(source("k", { importedAt: "now" as never })),
      (s) => s.sources.record(source("", {})),
      (s) => s.sources.record(source("k", { path: "" })),
      (s) => s.sources.record(source("k", { report: undefined as never })),
      (s) => s.sources.record(null as never),
      (s) => s.sources.find(7 as never),
      (s) => s.sources.atPath(""),
      (s) => s.sources.ofRun(""),
      (s) => s.sources.markRemoved(""),
      (s) => s.quarantine.add(line(1, "x", { runId: "m9" })),
      (s) => s.quarantine.add(line(0, "x")),
      (s) => s.quarantine.add(line(1.5, "x")),
      (s) => s.quarantine.add({ ...line(1, "x"), bytes: "x" as never }),
      (s) => s.quarantine.add(line(1, "x", { reason: "" })),
      (s) => s.quarantine.add(line(1, "x", { path: 5 as never })),
      (s) => s.quarantine.add(line(1, "x"), -5),
      (s) => s.quarantine.list({ limit: 0 }),
      (s) => s.quarantine.list({ limit: 100_001 }),
      (s) => s.quarantine.list({ run: "m1" } as never),
      (s) => s.quarantine.list({ runId: "" }),
    ];
    for (const call of refused) {
      const got = await same(m, store, call);
      expect(got, String(call)).not.toHaveProperty("ok");
    }
    await sameRows(backend, where, db);
  });

  it("gives the SQLite stores' answers to any sequence of calls (property)", async () => {
    const { m, store, clock } = await setup();
    let round = 0;
    const run = fc.constantFrom("a", "b", "c");
    const key = fc.constantFrom("k1", "k2", "K3", "k4");
    const path = fc.constantFrom("p/x", "p/y", "P/z");
    const command = fc.oneof(
      fc.record({ op: fc.constant("start"), run }),
      fc.record({
        op: fc.constant("finish"),
        run,
        status: fc.constantFrom("succeeded", "partial", "failed", "interrupted"),
      }),
      fc.record({
        op: fc.constant("record"),
        key,
        path,
        run: fc.option(run, { nil: null }),
        status: fc.constantFrom("imported", "skipped", "warning", "failed"),
        at: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
        count: fc.integer({ min: 0, max: 5 }),
      }),
      fc.record({ op: fc.constant("remove"), key }),
      fc.record({
        op: fc.constant("quarantine"),
        path,
        run,
        n: fc.integer({ min: 1, max: 3 }),
        bytes: fc.uint8Array({ maxLength: 3 }),
      }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        // Each round has its own ids and paths; lists and counts span every round.
        const p = `r${++round}-`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "start") await same(m, store, (s) => s.runs.start(p + c.run));
          else if (c.op === "finish") {
            await same(m, store, (s) => s.runs.finish(p + c.run, c.status, { by: c.status }));
          } else if (c.op === "record") {
            const recorded = source(p + c.key, {
              path: p + c.path,
              lastRunId: c.run === null ? null : p + c.run,
              status: c.status,
              importedAt: c.at,
              recordCount: c.count,
            });
            await same(m, store, (s) => s.sources.record(recorded));
          } else if (c.op === "remove") {
            await same(m, store, (s) => s.sources.markRemoved(p + c.key));
          } else {
            const entry = { ...line(c.n, ""), path: p + c.path, runId: p + c.run, bytes: c.bytes };
            await same(m, store, (s) => s.quarantine.add(entry));
          }
        }
        for (const r of ["a", "b", "c"]) {
          await same(m, store, (s) => s.runs.get(p + r));
          await same(m, store, (s) => s.sources.ofRun(p + r));
          await same(m, store, (s) => s.quarantine.list({ runId: p + r }));
        }
        for (const at of ["p/x", "p/y", "P/z"])
          await same(m, store, (s) => s.sources.atPath(p + at));
        await same(m, store, (s) => s.runs.list(1000));
        await same(m, store, (s) => s.runs.running());
        await same(m, store, (s) => s.quarantine.countsByRun());
      }),
      { numRuns: 40 },
    );
  });

  it("records every run and line when 4 control planes import at once", async () => {
    const { cp, another, count } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    await Promise.all(
      hosts.flatMap((host, h) => [0, 1, 2, 3].map((i) => host.migrations.runs.start(`h${h}-${i}`))),
    );
    expect(await count("migration_runs", "status = 'running'")).toBe(16);
    for (const host of hosts) expect(await host.migrations.runs.running()).toHaveLength(16);
    // The same line quarantined by every host at once is kept once, and one host is told so.
    const added = await Promise.all(
      hosts.map((host, h) => host.migrations.quarantine.add(line(4, "{dup", { runId: `h${h}-0` }))),
    );
    expect(added.filter(Boolean)).toHaveLength(1);
    await Promise.all(
      hosts.map((host, h) =>
        host.migrations.sources.record(source(`s${h}`, { lastRunId: `h${h}-1` })),
      ),
    );
    expect(await count("migration_sources")).toBe(4);
    expect(await count("migration_quarantine")).toBe(1);
    const clash = await Promise.allSettled(hosts.map((host) => host.migrations.runs.start("x")));
    expect(clash.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });
});
