import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { BACKUP_RUN_COLUMNS, BackupRunStore } from "./backup-run-store.js";

const tempDir = useTempDirs();

function open() {
  return openDatabase({ path: join(tempDir(), "state.sqlite"), role: "global" });
}

describe("BackupRunStore", () => {
  it("declares exactly the columns of backup_runs", () => {
    const db = open();
    const columns = db
      .prepare<{ name: string }>("SELECT name FROM pragma_table_info('backup_runs')")
      .all()
      .map((row) => row.name);
    expect([...BACKUP_RUN_COLUMNS].sort()).toEqual(columns.sort());
    db.close();
  });

  it("records a run as running, then ends it exactly once", () => {
    const db = open();
    const runs = new BackupRunStore(db);
    runs.start("r1", 1000, "/b/one.tar.gz");
    expect(runs.get("r1")).toEqual({
      id: "r1",
      createdAt: 1000,
      archivePath: "/b/one.tar.gz",
      status: "running",
      manifest: {},
      owner: { pid: process.pid, started: expect.any(Number) },
    });
    expect(runs.finish("r1", "succeeded", { databases: [] })).toBe(true);
    expect(runs.finish("r1", "failed", { error: "late" })).toBe(false);
    expect(runs.get("r1")).toMatchObject({ status: "succeeded", manifest: { databases: [] } });
    expect(runs.finish("missing", "failed", {})).toBe(false);
    db.close();
  });

  it("lists the newest runs first, up to a limit", () => {
    const db = open();
    const runs = new BackupRunStore(db);
    runs.start("old", 1, "/b/1");
    runs.start("new", 3, "/b/3");
    runs.start("mid", 2, "/b/2");
    expect(runs.list().map((run) => run.id)).toEqual(["new", "mid", "old"]);
    expect(runs.list(1).map((run) => run.id)).toEqual(["new"]);
    expect(() => runs.list(0)).toThrow(TypeError);
    db.close();
  });
});
