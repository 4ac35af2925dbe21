import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

interface AgentCounts {
  events: number;
  sessions: number;
  entries: number;
}

/** What a clean import must hold, counted here from the legacy files themselves. */
function countFiles(home: string): Record<string, AgentCounts> {
  const counts: Record<string, AgentCounts> = {};
  for (const agentId of readdirSync(join(home, "agents"))) {
    const dir = join(home, "agents", agentId, "sessions");
    const agent: AgentCounts = { events: 0, sessions: 0, entries: 0 };
    for (const name of readdirSync(dir)) {
      if (name === "sessions.json") {
        agent.entries = Object.keys(JSON.parse(readFileSync(join(dir, name), "utf8"))).length;
      } else if (/\.jsonl(\.deleted\..+)?$/.test(name)) {
        agent.sessions++;
        agent.events += readFileSync(join(dir, name), "utf8")
          .split("\n")
          .filter((line) => line.trim() !== "").length;
      }
    }
    counts[agentId] = agent;
  }
  return counts;
}

function countRows(home: string): Record<string, AgentCounts> {
  const state = openStateHome({ home, create: false });
  try {
    const counts: Record<string, AgentCounts> = {};
    for (const { agentId } of state.listAgents()) {
      const db = state.agent(agentId, { create: false }).db;
      const count = (table: string) =>
        db.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).get()?.n ?? -1;
      counts[agentId] = {
        events: count("transcript_events"),
        sessions: count("sessions"),
        entries: count("session_entries"),
      };
    }
    return counts;
  } finally {
    state.close();
  }
}

/** True once the run is recorded as running: the backup is done and the import has begun. */
function importStarted(home: string): boolean {
  const path = join(home, "state", "state.sqlite");
  if (!existsSync(path)) return false;
  try {
    const db = openRawSqlite(path, { readonly: true, fileMustExist: true });
    try {
      return (
        db.prepare("SELECT 1 FROM migration_runs WHERE status = 'running'").get() !== undefined
      );
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}

/** Runs `doctor --fix` and sends `signal` once the import has begun; resolves with the exit. */
function fixAndInterrupt(
  home: string,
  signal: NodeJS.Signals,
): Promise<{ code: number | null; signal: string | null; stdout: string; sent: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, "doctor", "--fix", "--json", "--home", home], {
      env: { ...process.env, AGENTSTATE_HOME: "" },
    });
    let stdout = "";
    let sent = false;
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    const poll = setInterval(() => {
      if (!importStarted(home)) return;
      clearInterval(poll);
      sent = child.kill(signal);
    }, 10);
    child.on("exit", (code, exitSignal) => {
      clearInterval(poll);
      resolve({ code, signal: exitSignal, stdout, sent });
    });
  });
}

describe("doctor --fix interrupted by a signal", () => {
  for (const [signal, exitCode] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    it(`records the run as interrupted on ${signal}, exits ${exitCode}, and a rerun finishes it`, async () => {
      const home = join(tempDir(), "home");
      generateLegacyHome(home, {
        agents: 2,
        sessions: 150,
        events: 100,
        bigTranscriptMb: 4,
        deleted: 5,
        daycare: false,
        cronJobs: 0,
      });
      const expected = countFiles(home);

      const run = await fixAndInterrupt(home, signal);
      expect(run.sent).toBe(true);
      expect(run.signal).toBeNull();
      expect(run.code).toBe(exitCode);
      expect(JSON.parse(run.stdout)).toMatchObject({ status: "interrupted" });
      const history = cli(["doctor", "--history", "--json", "--home", home]);
      expect(history.status).toBe(0);
      const runs = JSON.parse(history.stdout) as Array<{ status: string; finishedAt: number }>;
      expect(runs).toHaveLength(1);
      expect(runs[0]?.status).toBe("interrupted");
      expect(runs[0]?.finishedAt).toEqual(expect.any(Number));
      // The run stopped part way: some sources are still there for the rerun.
      const left = ["main", "agent1"].flatMap((agentId) =>
        readdirSync(join(home, "agents", agentId, "sessions")).filter((n) => n.endsWith(".jsonl")),
      );
      expect(left.length).toBeGreaterThan(0);

      const rerun = cli(["doctor", "--fix", "--json", "--home", home]);
      expect(rerun.status, rerun.stderr).toBe(0);
      expect(JSON.parse(rerun.stdout).status).toBe("succeeded");
      expect(countRows(home)).toEqual(expected);
      const after = JSON.parse(cli(["doctor", "--history", "--json", "--home", home]).stdout);
      expect(after.map((r: { status: string }) => r.status).sort()).toEqual([
        "interrupted",
        "succeeded",
      ]);
    }, 120_000);
  }
});
