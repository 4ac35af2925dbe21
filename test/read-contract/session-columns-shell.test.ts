import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";

/** Debian's shell (3.40 on Debian 12): `npm test` installs it first (scripts/ensure-sqlite3.mjs). */
const SHELL = "/usr/bin/sqlite3";
const tempDir = useTempDirs();

function shell(path: string, sql: string): string {
  expect(existsSync(SHELL), `${SHELL} is missing: run node scripts/ensure-sqlite3.mjs`).toBe(true);
  const result = spawnSync(SHELL, ["-bail", path, sql], { encoding: "utf8" });
  expect(result.stderr).toBe("");
  expect(result.status).toBe(0);
  return result.stdout;
}

describe("the generated session columns in the stock sqlite3 shell", () => {
  it("reads them, keeps their indexes in step when the shell writes, and passes integrity_check", () => {
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    home.sessions.upsert("main", "agent:main:sub", {
      sessionId: "s1",
      updatedAt: 5,
      status: "failed",
      lastChannel: "whatsapp",
      spawnedBy: "agent:main:main",
      archivedAt: 7,
      lastInteractionAt: 9,
    });
    home.sessions.upsert("main", "agent:main:main", { sessionId: "s0", updatedAt: 4 });
    home.close();
    const db = join(dir, "agents", "main", "agent", "agent.sqlite");
    const columns =
      "session_key, status, channel, parent_session_key, archived, pinned, last_activity_at";
    expect(shell(db, `SELECT ${columns} FROM session_entries WHERE status = 'failed'`)).toBe(
      "agent:main:sub|failed|whatsapp|agent:main:main|1|0|9\n",
    );
    // A write from the shell maintains the indexes with 3.40's own JSON functions.
    shell(
      db,
      `UPDATE session_entries SET entry_json = json_set(entry_json, '$.status', 'done', '$.pinnedAt', 1)
       WHERE session_key = 'agent:main:main'`,
    );
    expect(shell(db, "SELECT session_key FROM session_entries WHERE pinned = 1")).toBe(
      "agent:main:main\n",
    );
    expect(
      shell(
        db,
        "SELECT session_key FROM session_entries INDEXED BY session_entries_by_status WHERE status = 'done'",
      ),
    ).toBe("agent:main:main\n");
    expect(shell(db, "PRAGMA integrity_check")).toBe("ok\n");
  });
});
