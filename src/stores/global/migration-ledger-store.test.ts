import { describe, expect, it } from "vitest";
import { BackupRunStore } from "./backup-run-store.js";
import { MigrationLedgerStore, type NewMigrationSource } from "./migration-ledger-store.js";
import { MigrationQuarantineStore } from "./migration-quarantine-store.js";
import { expectStateError, simulatedClock, useGlobalDb } from "./test-support/global-db.js";

const openDb = useGlobalDb();

const source = (key: string, importedAt: number | null): NewMigrationSource => ({
  sourceKey: key,
  kind: "sessions",
  path: "agents/main/sessions/sessions.json",
  targetTable: "agent.session_entries",
  sha256: "ab",
  sizeBytes: 10,
  recordCount: 1,
  lastRunId: "m1",
  status: "imported",
  importedAt,
  report: {},
});

describe("the ledgers' refusals, stated the same on every backend", () => {
  it("refuses a second run with an id already recorded, as E_CONFLICT", () => {
    const db = openDb();
    const backups = new BackupRunStore(db);
    backups.start("b", 1, "/b");
    expectStateError(
      () => backups.start("b", 2, "/c"),
      "E_CONFLICT",
      /backup run b already exists/,
    );
    const ledger = new MigrationLedgerStore(db);
    ledger.startRun("m");
    expectStateError(() => ledger.startRun("m"), "E_CONFLICT", /migration run m already exists/);
    expect(backups.get("b")?.archivePath).toBe("/b");
  });

  it("stamps runs with its clock and refuses an end status of running", () => {
    const clock = simulatedClock(5_000);
    const ledger = new MigrationLedgerStore(openDb(), { clock: clock.now });
    expect(ledger.startRun("m").startedAt).toBe(5_000);
    clock.advance(7);
    expect(ledger.finishRun("m", "succeeded", {}).finishedAt).toBe(5_007);
    expectStateError(() => ledger.finishRun("m", "running" as never, {}), "E_INVALID_ARGUMENT");
    expectStateError(() => ledger.finishRun("gone", "failed", {}), "E_NOT_FOUND");
    expectStateError(() => ledger.listRuns(-1), "E_INVALID_ARGUMENT", /limit/);
  });

  it("names the missing run when a source or a quarantined line points at none", () => {
    const db = openDb();
    const ledger = new MigrationLedgerStore(db);
    expectStateError(
      () => ledger.recordSource(source("k", 1)),
      "E_CONSTRAINT",
      /migration run m1 is not in the ledger/,
    );
    const line = { path: "p", line: 1, kind: "k", sourceSha256: "s", reason: "r", runId: "m9" };
    expectStateError(
      () => new MigrationQuarantineStore(db).add({ ...line, bytes: Buffer.from("x") }),
      "E_CONSTRAINT",
      /migration run m9 is not in the ledger/,
    );
    expectStateError(
      () => ledger.recordSource({ ...source("k", 1), status: "done" as never }),
      "E_INVALID_ARGUMENT",
    );
  });

  it("lists a path's versions latest import first, never-imported ones last, ties by key", () => {
    const ledger = new MigrationLedgerStore(openDb());
    ledger.startRun("m1");
    for (const [key, at] of [
      ["c", null],
      ["b", 5],
      ["a", 5],
      ["d", 9],
    ] as const) {
      ledger.recordSource(source(key, at));
    }
    const keys = (list: { sourceKey: string }[]) => list.map((s) => s.sourceKey);
    expect(keys(ledger.sourcesAtPath("agents/main/sessions/sessions.json"))).toEqual([
      "d",
      "a",
      "b",
      "c",
    ]);
    expect(keys(ledger.sourcesOfRun("m1"))).toEqual(["a", "b", "c", "d"]);
  });
});
