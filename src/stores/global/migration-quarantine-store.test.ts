import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { MigrationLedgerStore } from "./migration-ledger-store.js";
import { MigrationQuarantineStore } from "./migration-quarantine-store.js";

const tempDir = useTempDirs();

function open() {
  const db = openDatabase({ path: join(tempDir(), "state.sqlite"), role: "global" });
  const ledger = new MigrationLedgerStore(db);
  ledger.startRun("run-1");
  ledger.startRun("run-2");
  return { db, store: new MigrationQuarantineStore(db) };
}

const line = (n: number, bytes: Buffer, runId = "run-1") => ({
  path: "cron/runs/nightly.jsonl",
  line: n,
  kind: "cron-runs",
  sourceSha256: "a".repeat(64),
  reason: "invalid UTF-8",
  bytes,
  runId,
});

describe("MigrationQuarantineStore", () => {
  it("keeps bytes exactly, and the same line of the same path only once", () => {
    const { db, store } = open();
    const bytes = Buffer.from([0x7b, 0xff, 0x00, 0x0d]);
    expect(store.add(line(2, bytes))).toBe(true);
    expect(store.add(line(2, bytes, "run-2"))).toBe(false);
    // Other bytes at that line number (the file was rewritten) are a different line.
    expect(store.add(line(2, Buffer.from("x"), "run-2"))).toBe(true);
    const raw = db
      .prepare<{ line_bytes: Uint8Array; run_id: string }>(
        "SELECT line_bytes, run_id FROM migration_quarantine ORDER BY rowid",
      )
      .all();
    expect(raw.map((r) => r.run_id)).toEqual(["run-1", "run-2"]);
    expect(Buffer.from(raw[0]?.line_bytes as Uint8Array).equals(bytes)).toBe(true);
    expect(store.list({ runId: "run-1" }).map((l) => l.bytes)).toEqual([bytes]);
    expect(store.list()).toHaveLength(2);
    expect(store.countsByRun()).toEqual(
      new Map([
        ["run-1", 1],
        ["run-2", 1],
      ]),
    );
    db.close();
  });

  it("refuses a run that is not in the ledger and a line number below 1", () => {
    const { db, store } = open();
    try {
      store.add(line(1, Buffer.from("x"), "no-such-run"));
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_CONSTRAINT")).toBe(true);
    }
    expect(() => store.add(line(0, Buffer.from("x")))).toThrow(TypeError);
    expect(() => store.list({ limit: 0 })).toThrow(/limit/);
    db.close();
  });
});
