import { spawn, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { agentDbRelativePath, openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";

const CHILD = fileURLToPath(new URL("../fixtures/pool-child.mjs", import.meta.url));
const tempDir = useTempDirs();

beforeAll(() => requireBuild());

function messagesOf(home: string, agentId: string): number {
  const state = openStateHome({ home, readonly: true });
  try {
    return state.transcripts
      .read({ agentId, sessionId: "s" })
      .filter((stored) => stored.event.type === "message").length;
  } finally {
    state.close();
  }
}

describe("a process touching many agents", () => {
  it("stays under a 256-descriptor limit across 2,000 agents, and every event is there afterwards", () => {
    const home = tempDir();
    const result = spawnSync(
      "bash",
      ["-c", `ulimit -n 256; exec "${process.execPath}" "${CHILD}" touch "${home}" 2000`],
      { encoding: "utf8", timeout: 240_000 },
    );
    expect(result.stderr).not.toContain("EMFILE");
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const pool = JSON.parse(result.stdout);
    expect(pool.open).toBeLessThanOrEqual(pool.maxOpenAgents);
    expect(pool.opened).toBeGreaterThanOrEqual(2000);
    // A fresh home, one agent at a time, counts what the child stored.
    const state = openStateHome({ home, readonly: true, maxOpenAgents: 4 });
    try {
      const agents = state.listAgents();
      expect(agents).toHaveLength(2000);
      let messages = 0;
      for (const { agentId } of agents) {
        messages += state.withAgent(
          agentId,
          (agent) => agent.transcripts.read("s").filter((e) => e.event.type === "message").length,
        );
      }
      expect(messages).toBe(4000);
    } finally {
      state.close();
    }
  }, 300_000);

  it("holds at most 3 descriptors per agent of the cap, plus 20, while the checkpointer thread serves the writes", () => {
    // Yielding between writes (as a gateway does) lets every write reach the checkpointer thread,
    // whose own connections, and the descriptors SQLite keeps after them, count too.
    for (const cap of [4, 16]) {
      const home = tempDir();
      const result = spawnSync(process.execPath, [CHILD, "fds", home, "60", String(cap)], {
        encoding: "utf8",
        timeout: 120_000,
      });
      expect(result.stderr).toBe("");
      expect(result.status).toBe(0);
      const { before, peak, pool } = JSON.parse(result.stdout);
      expect(pool.opened).toBeGreaterThanOrEqual(120);
      expect(peak - before, `cap ${cap}`).toBeLessThanOrEqual(3 * cap + 20);
      expect(messagesOf(home, "agent-59")).toBe(2);
    }
  }, 120_000);

  it("counts an open cold index file against the same budget", () => {
    // A large cap, where the + 20 cannot hide one descriptor more per agent.
    for (const cap of [8, 64]) {
      const home = tempDir();
      const args = [CHILD, "fds", home, "100", String(cap), "cold"];
      const result = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 120_000 });
      expect(result.stderr).toBe("");
      expect(result.status).toBe(0);
      const { before, peak, pool } = JSON.parse(result.stdout);
      expect(pool.opened).toBeGreaterThanOrEqual(200);
      expect(peak - before, `cap ${cap}`).toBeLessThanOrEqual(3 * cap + 20);
      expect(messagesOf(home, "agent-99")).toBe(2);
    }
  }, 120_000);

  it("leaves evicted agents' closes to the checkpointer thread: nothing lost, a stale handle refused, no -wal left", () => {
    const home = tempDir();
    const agents = 100;
    const result = spawnSync(process.execPath, [CHILD, "evict", home, String(agents)], {
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const { pool, staleCode } = JSON.parse(result.stdout);
    expect(staleCode).toBe("E_CLOSED");
    expect(pool.evicted).toBeGreaterThanOrEqual(2 * agents - 16);
    expect(pool.closedOffThread).toBeGreaterThan(0);
    // After the home closed, every file is whole and alone: no WAL, no index, no thread holding it.
    const left = readdirSync(home, { recursive: true }).map(String);
    expect(left.filter((name) => /-(wal|shm)$/.test(name))).toEqual([]);
    for (let i = 0; i < agents; i++) {
      const raw = openRawSqlite(join(home, agentDbRelativePath(`agent-${i}`)), {
        fileMustExist: true,
        readonly: true,
      });
      try {
        expect(raw.pragma("quick_check", { simple: true })).toBe("ok");
        const events = raw.prepare("SELECT event_json FROM transcript_events").all();
        const messages = events.filter(
          (row) => JSON.parse((row as { event_json: string }).event_json).type === "message",
        );
        expect(messages).toHaveLength(3);
      } finally {
        raw.close();
      }
    }
  }, 120_000);

  it("leaves every agent database whole after a SIGKILL in the middle of writes to many open agents", async () => {
    const home = tempDir();
    const agents = 120;
    const child = spawn(process.execPath, [CHILD, "write", home, String(agents)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve) => {
      createInterface({ input: child.stdout }).on("line", (line) => {
        if (line === "ready") {
          // Into the next rounds, so the kill lands mid-transaction somewhere.
          setTimeout(() => {
            child.kill("SIGKILL");
            resolve();
          }, 300);
        }
      });
    });
    await new Promise((resolve) => child.on("close", resolve));
    for (let i = 0; i < agents; i++) {
      const raw = openRawSqlite(join(home, agentDbRelativePath(`agent-${i}`)), {
        fileMustExist: true,
      });
      try {
        expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
      } finally {
        raw.close();
      }
      // Whole batches only: each appendMany committed all its 20 events or none.
      expect(messagesOf(home, `agent-${i}`) % 20).toBe(0);
    }
  }, 120_000);
});
