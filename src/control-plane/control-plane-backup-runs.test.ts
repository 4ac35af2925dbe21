import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../db/database.js";
import { BackupRunStore } from "../stores/global/backup-run-store.js";
import { useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneBackupRuns } from "./control-plane.js";
import { BACKENDS, type Backend, useControlPlanes } from "./test-support/control-planes.js";
import { same, storedRows } from "./test-support/parity.js";

// The backup run ledger on every backend, as control-plane-commitments.test.ts does commitments:
// each test runs on the embedded SQLite control plane and on a real PostgreSQL, with
// BackupRunStore on its own SQLite database as the oracle of parity, and rows read back through a
// separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

type Runs = ControlPlaneBackupRuns | BackupRunStore;

const ROWS = "SELECT * FROM backup_runs ORDER BY id";
const OWNER = { pid: 4242, started: 987_654 };

const stored = (backend: Backend, where: string) =>
  storedRows(backend, where, ROWS, { bigints: ["created_at", "owner_pid", "owner_started"] });

function oracleRows(db: Database) {
  return db.prepare(ROWS).all();
}

const reads = (s: Runs) => Promise.all([s.list(), s.running(), s.listAll()]);

describe.each(BACKENDS)("control plane on %s: backup runs", (backend) => {
  const setup = async () => {
    const opened = await open(backend);
    const db = openDb();
    return { ...opened, runs: opened.cp.backupRuns, store: new BackupRunStore(db), db };
  };

  it("starts, finishes, gets and lists runs exactly as BackupRunStore does", async () => {
    const { runs, store, db, where } = await setup();
    const t = 1_770_000_000_000;
    await same(runs, store, (s) => s.start("b2", t, "/backups/b2.tar.gz", OWNER));
    await same(runs, store, (s) => s.start("b1", t, "/backups/b1 é.tar.gz"));
    await same(runs, store, (s) => s.start("b3", t + 5, "/b3", { pid: 7, started: null }));
    await same(runs, store, (s) => s.start("b0", t - 5, "/b0", OWNER));
    await same(runs, store, reads);
    const manifest = { backupId: "b2", files: [{ path: "state.sqlite", bytes: 1 }], "ü😀": null };
    await same(runs, store, (s) => s.finish("b2", "succeeded", manifest));
    await same(runs, store, (s) => s.finish("b2", "failed", { error: "late" }));
    await same(runs, store, (s) => s.finish("b1", "failed", { error: { code: "E_IO" } }));
    await same(runs, store, (s) => s.finish("b3", "interrupted", { interrupted: "pid 7 died" }));
    await same(runs, store, (s) => s.finish("missing", "succeeded", {}));
    for (const id of ["b0", "b1", "b2", "b3", "nope"]) await same(runs, store, (s) => s.get(id));
    await same(runs, store, reads);
    for (const limit of [1, 2, 3, 10_000]) await same(runs, store, (s) => s.list(limit));
    expect(await stored(backend, where)).toEqual(oracleRows(db));
  });

  it("refuses the arguments BackupRunStore refuses, with the same code and message", async () => {
    const { runs, store, db, where } = await setup();
    await same(runs, store, (s) => s.start("b", 1, "/b", OWNER));
    const refused: ((s: Runs) => unknown)[] = [
      (s) => s.start("b", 2, "/again", OWNER),
      (s) => s.start("", 1, "/x"),
      (s) => s.start(5 as never, 1, "/x"),
      (s) => s.start("x".repeat(257), 1, "/x"),
      (s) => s.start("x", -1, "/x"),
      (s) => s.start("x", 1.5, "/x"),
      (s) => s.start("x", "now" as never, "/x"),
      (s) => s.start("x", 1, ""),
      (s) => s.start("x", 1, "/x", { pid: 0, started: null }),
      (s) => s.start("x", 1, "/x", { pid: 1, started: 1.5 }),
      (s) => s.finish("b", "running" as never, {}),
      (s) => s.finish("b", "done" as never, {}),
      (s) => s.finish("b", "failed", undefined as never),
      (s) => s.finish("b", "failed", { n: 10n } as never),
      (s) => s.finish("", "failed", {}),
      (s) => s.get(5 as never),
      (s) => s.list(0),
      (s) => s.list(1.5),
      (s) => s.list(10_001),
    ];
    for (const call of refused) {
      const got = await same(runs, store, call);
      expect(got, String(call)).not.toHaveProperty("ok");
    }
    expect(await stored(backend, where)).toEqual(oracleRows(db));
    expect((await stored(backend, where)).map((r) => r.status)).toEqual(["running"]);
  });

  it("gives BackupRunStore's answers to any sequence of calls (property)", async () => {
    const { runs, store } = await setup();
    let round = 0;
    const id = fc.constantFrom("a", "b", "c", "d", "B");
    const command = fc.oneof(
      fc.record({ op: fc.constant("start"), id, at: fc.integer({ min: 0, max: 5 }) }),
      fc.record({
        op: fc.constant("finish"),
        id,
        status: fc.constantFrom("succeeded", "failed", "interrupted", "running"),
        note: fc.string({ maxLength: 4 }),
      }),
      fc.record({ op: fc.constant("get"), id }),
      fc.record({ op: fc.constant("list"), limit: fc.integer({ min: 0, max: 4 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        const p = `r${++round}-`;
        for (const c of commands) {
          if (c.op === "start") {
            await same(runs, store, (s) => s.start(p + c.id, c.at, `/${c.id}`, OWNER));
          } else if (c.op === "finish") {
            const status = c.status as "failed";
            await same(runs, store, (s) => s.finish(p + c.id, status, { note: c.note }));
          } else if (c.op === "get") await same(runs, store, (s) => s.get(p + c.id));
          else await same(runs, store, (s) => s.list(c.limit));
        }
        await same(runs, store, reads);
      }),
      { numRuns: 40 },
    );
  });

  it("records every run when 4 control planes start runs at once; one finish wins each", async () => {
    const { cp, another, count } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    await Promise.all(
      hosts.flatMap((host, h) =>
        [0, 1, 2, 3, 4].map((i) => host.backupRuns.start(`h${h}-${i}`, 1_000 + i, `/h${h}/${i}`)),
      ),
    );
    expect(await count("backup_runs", "status = 'running'")).toBe(20);
    for (const host of hosts) expect((await host.backupRuns.running()).length).toBe(20);
    const ended = await Promise.all(
      hosts.map((host, h) => host.backupRuns.finish("h0-0", "succeeded", { by: h })),
    );
    expect(ended.filter(Boolean)).toHaveLength(1);
    const clash = await Promise.allSettled(
      hosts.map((host) => host.backupRuns.start("x", 1, "/x")),
    );
    expect(clash.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of clash.filter((r) => r.status === "rejected")) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: "E_CONFLICT" });
    }
    expect(await count("backup_runs")).toBe(21);
  });
});
