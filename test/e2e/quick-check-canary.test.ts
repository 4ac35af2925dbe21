import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { agentDbRelativePath, openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(() => requireBuild());

/** Overwrites the root page of `table` with garbage: the header and page 1 stay readable. */
function corruptTable(path: string, table: string): void {
  const raw = openRawSqlite(path, { fileMustExist: true });
  const pageSize = raw.pragma("page_size", { simple: true }) as number;
  const { rootpage } = raw
    .prepare("SELECT rootpage FROM sqlite_schema WHERE name = ?")
    .get(table) as { rootpage: number };
  raw.close();
  const fd = openSync(path, "r+");
  try {
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}

describe("the background quick_check canary", () => {
  it("gc records each agent's quick_check and status reports a damaged page with its time", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    const text = "x".repeat(400);
    for (const agentId of ["damaged", "healthy"]) {
      state.transcripts.appendMany(
        { agentId, sessionId: "s" },
        Array.from({ length: 100 }, (_, n) => ({
          type: "message",
          message: { role: "user", content: `${n} ${text}` },
        })),
      );
    }
    state.close();
    corruptTable(join(home, agentDbRelativePath("damaged")), "transcript_events");

    const before = Date.now();
    const gc = cli(["gc", "--home", home, "--json"]);
    expect(gc.status).toBe(4);
    const checked = JSON.parse(gc.stdout).databases.filter(
      (db: { agentId: string | null }) => db.agentId !== null,
    );
    expect(checked.map((db: { agentId: string }) => db.agentId)).toEqual(["damaged", "healthy"]);

    const status = cli(["status", "--home", home, "--json"]);
    const byAgent = new Map(
      JSON.parse(status.stdout).databases.map(
        (db: { agentId: string | null; lastQuickCheck: unknown }) => [
          db.agentId,
          db.lastQuickCheck,
        ],
      ),
    );
    const damaged = byAgent.get("damaged") as { result: string; at: number };
    expect(damaged.result).not.toBe("ok");
    expect(damaged.result.length).toBeGreaterThan(0);
    expect(damaged.at).toBeGreaterThanOrEqual(before);
    expect(damaged.at).toBeLessThanOrEqual(Date.now());
    expect(byAgent.get("healthy")).toMatchObject({ result: "ok" });
    expect(byAgent.get(null)).toBeNull();
  });
});
