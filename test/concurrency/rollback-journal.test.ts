import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { requireBuild } from "../support/built.js";

const run = promisify(execFile);
const WRITER = new URL("../fixtures/kv-writer.mjs", import.meta.url);
const PER_WRITER = 100;

async function writer(home: string, name: string, start: number) {
  const { stdout } = await run(
    process.execPath,
    [WRITER.pathname, home, name, String(PER_WRITER), String(start)],
    { env: { ...process.env, AGENTSTATE_JOURNAL_MODE: "delete" } },
  );
  return JSON.parse(stdout) as { writer: string; errors: string[]; written: number };
}

/** The journal mode as written in the file, read by a connection that sets none. */
function journalModeOnDisk(path: string): string {
  const db = openRawSqlite(path, { readonly: true, fileMustExist: true });
  try {
    return db.pragma("journal_mode", { simple: true }) as string;
  } finally {
    db.close();
  }
}

describe("the rollback journal (for filesystems where WAL is unsafe), two OS processes", () => {
  let home: string;
  beforeAll(() => {
    requireBuild();
    home = mkdtempSync(join(tmpdir(), "agentstate-rollback-"));
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("loses no write, and every database stays in journal_mode=delete without a -wal file", async () => {
    openStateHome({ home, journalMode: "rollback" }).close();
    const start = Date.now() + 800;
    const results = await Promise.all([writer(home, "p1", start), writer(home, "p2", start)]);
    for (const result of results) {
      expect(result.errors, result.writer).toEqual([]);
      expect(result.written).toBe(PER_WRITER);
    }
    const state = openStateHome({ home, create: false, journalMode: "rollback" });
    expect(state.kv.get("shared", "counter")).toBe(2 * PER_WRITER);
    expect(state.agent("main", { create: false }).kv.get("shared", "counter")).toBe(2 * PER_WRITER);
    const files = [state.db.path, state.agent("main").db.path];
    state.close();
    for (const file of files) {
      expect(journalModeOnDisk(file), file).toBe("delete");
      expect(existsSync(`${file}-wal`), file).toBe(false);
    }
  });
});
