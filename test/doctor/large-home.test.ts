import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";
import { requireBuild } from "../support/built.js";

const RUNNER = new URL("../fixtures/doctor-runner.mjs", import.meta.url).pathname;
let root: string;
beforeAll(() => {
  requireBuild();
  root = mkdtempSync(join(tmpdir(), "agentstate-large-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("doctor --fix on a generated home: 3 agents, 500 sessions, a 16 MB transcript, cron runs, a daycare agent", () => {
  it("imports exactly what the files hold, in bounded memory", () => {
    const home = join(root, "home");
    const counts = generateLegacyHome(home, {
      agents: 3,
      sessions: 167,
      events: 12,
      bigTranscriptMb: 16,
      deleted: 10,
      cronJobs: 3,
      cronRuns: 40,
      daycare: true,
    });
    expect(counts.sessions).toBeGreaterThanOrEqual(500);
    const run = spawnSync(process.execPath, [RUNNER, home], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as {
      status: string;
      rssAtLargest: number;
      peakRss: number;
    };
    expect(result.status).toBe("succeeded");
    // Growth while importing the 16 MB transcript: the process peak minus RSS when it started
    // (an upper bound even if the peak came earlier).
    const growthMb = (result.peakRss - result.rssAtLargest) / (1024 * 1024);
    expect(growthMb, `RSS grew ${growthMb.toFixed(1)} MB`).toBeLessThan(64);

    const state = openStateHome({ home, create: false });
    let sessions = 0;
    let events = 0;
    let entries = 0;
    for (const agent of state.listAgents()) {
      const db = state.agent(agent.agentId, { create: false }).db;
      if (agent.agentId.startsWith("dc0")) {
        expect(
          db.prepare("SELECT count(*) AS n FROM transcript_events WHERE seq > 1").get(),
        ).toEqual({ n: counts.daycareEvents });
        continue;
      }
      sessions += (db.prepare("SELECT count(*) AS n FROM sessions").get() as { n: number }).n;
      events += (db.prepare("SELECT count(*) AS n FROM transcript_events").get() as { n: number })
        .n;
      entries += (db.prepare("SELECT count(*) AS n FROM session_entries").get() as { n: number }).n;
      const ended = db
        .prepare("SELECT count(*) AS n FROM sessions WHERE ended_at IS NOT NULL")
        .get();
      expect(ended).toEqual({ n: 10 });
    }
    expect({ sessions, events, entries }).toEqual({
      sessions: counts.sessions,
      events: counts.events,
      entries: counts.entries,
    });
    const big = state.transcripts.read(
      { agentId: "main", sessionId: counts.bigSessionId as string },
      { afterSeq: counts.bigEvents - 1 },
    );
    expect(big.map((e) => e.seq)).toEqual([counts.bigEvents]);
    const cron = state.db
      .prepare<{ jobs: number; runs: number }>(
        "SELECT (SELECT count(*) FROM cron_jobs) AS jobs, (SELECT count(*) FROM cron_run_logs) AS runs",
      )
      .get();
    expect(cron).toEqual({ jobs: counts.cronJobs, runs: counts.cronRuns });
    state.close();
  }, 300_000);
});
