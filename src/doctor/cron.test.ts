import { cpSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";
import { planMigration } from "./plan.js";

const tempDir = useTempDirs();
const EXAMPLE = fileURLToPath(new URL("../../examples/legacy-home/", import.meta.url));
const noBackup = async () => "(test: no backup)";
const MORNING = "3b1f2e4d-5c6a-4b7e-8f90-a1b2c3d4e5f6";

function count(home: string, table: string): number {
  const state = openStateHome({ home, create: false });
  try {
    return (
      state.db.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }
    ).n;
  } finally {
    state.close();
  }
}

function write(home: string, path: string, text: string): void {
  mkdirSync(join(home, path, ".."), { recursive: true });
  writeFileSync(join(home, path), text);
}

const run = (jobId: string, at: number, status = "ok", extra = {}) =>
  JSON.stringify({
    ts: at + 50,
    jobId,
    action: "finished",
    status,
    runAtMs: at,
    durationMs: 50,
    ...extra,
  });

describe("doctor: cron and subagent files", () => {
  it("imports the sample home's jobs with their state, their run log and the subagent registry", async () => {
    const home = join(tempDir(), "home");
    cpSync(EXAMPLE, home, { recursive: true });
    const report = await runDoctorFix({ home, backup: noBackup });
    const cronSources = report.sources.filter((s) => /cron|subagent/.test(s.kind));
    expect(cronSources.map((s) => s.status)).toEqual(cronSources.map(() => "imported"));
    const state = openStateHome({ home, create: false });
    const morning = state.cron.get(MORNING);
    expect(morning).toMatchObject({
      name: "Morning brief",
      agentId: "main",
      lastRunAt: 1772604000000,
      lastStatus: "ok",
      lastDurationMs: 8120,
      schedule: { kind: "cron", expr: "0 7 * * *", tz: "Europe/Berlin" },
    });
    expect(morning?.definition).toMatchObject({
      sessionTarget: "isolated",
      delivery: { channel: "telegram" },
    });
    const runs = state.cron.runs(MORNING);
    expect(runs.map((r) => r.status)).toEqual(["ok", "error", "ok"]);
    expect(runs[1]).toMatchObject({
      ranAt: 1772517600000,
      durationMs: 9900,
      error: "fetch failed",
    });
    expect(runs[2]?.record.summary).toBe("Dentist 09:30, Priya 14:00; sunny, 14°C.");
    expect(state.subagents.get("run-7c1d")?.requesterSessionKey).toBe("agent:main:main");
    state.close();
    expect(existsSync(join(home, "cron/jobs.json"))).toBe(false);
    expect(existsSync(join(home, "subagents/runs.json"))).toBe(false);
  });

  it("reads a bare JSON5 job array, restores jobs-state, and names what it cannot import", async () => {
    const home = tempDir();
    write(
      home,
      "cron/jobs.json",
      `[
        // written by hand
        { jobId: "poll", schedule: { everyMs: 60000, anchorMs: 0 }, enabled: true, },
        { id: "broken", schedule: { kind: "cron", expr: "61 * * * *" } },
        "not a job",
        { id: "poll", schedule: { everyMs: 1000 } },
      ]`,
    );
    write(
      home,
      "cron/jobs-state.json",
      JSON.stringify({
        version: 1,
        jobs: {
          poll: {
            updatedAtMs: 5,
            state: { lastRunAtMs: 1772000000000, lastRunStatus: "error", consecutiveErrors: 3 },
          },
          ghost: { state: { lastRunAtMs: 1 } },
        },
      }),
    );
    write(
      home,
      "cron/runs/poll.jsonl",
      [
        run("poll", 1000),
        "{oops",
        run("poll", 2000, "weird"),
        JSON.stringify({ action: "started", ts: 5 }),
        run("poll", 3000, "error", { error: "boom" }),
      ].join("\n"),
    );
    const plan = planMigration(home);
    const jobs = plan.sources.find((s) => s.path === "cron/jobs.json");
    expect(jobs?.records).toBe(2);
    expect(jobs?.problems.map((p) => p.key)).toEqual(["jobs[2]", "poll"]);
    const runs = plan.sources.find((s) => s.path === "cron/runs/poll.jsonl");
    expect(runs?.records).toBe(2);
    expect(runs?.problems.map((p) => p.line)).toEqual([2, 3]);
    expect(runs?.notes).toEqual(["1 line(s) are not finished runs"]);

    const report = await runDoctorFix({ home, backup: noBackup });
    const byPath = new Map(report.sources.map((s) => [s.path, s]));
    expect(byPath.get("cron/jobs.json")?.status).toBe("warning");
    expect(byPath.get("cron/jobs.json")?.problems.map((p) => [p.key, p.reason])).toEqual([
      ["jobs[2]", "not a job object"],
      ["poll", "duplicate job id; the first one is kept"],
      ["broken", expect.stringMatching(/minute|61/)],
    ]);
    expect(byPath.get("cron/jobs-state.json")?.problems).toEqual([
      { line: null, key: "ghost", reason: "state for a job that is not in jobs.json" },
    ]);
    // Files with problems stay for the operator; nothing in them was lost.
    expect(existsSync(join(home, "cron/jobs.json"))).toBe(true);
    expect(existsSync(join(home, "cron/runs/poll.jsonl"))).toBe(true);
    const state = openStateHome({ home, create: false });
    expect(state.cron.list().map((j) => j.jobId)).toEqual(["poll"]);
    expect(state.cron.get("poll")).toMatchObject({
      lastRunAt: 1772000000000,
      lastStatus: "error",
      consecutiveErrors: 3,
    });
    expect(state.cron.get("poll")?.definition).not.toHaveProperty("jobId");
    expect(state.cron.runs("poll").map((r) => [r.ranAt, r.status, r.error])).toEqual([
      [3000, "error", "boom"],
      [1000, "ok", null],
    ]);
    state.close();
  });

  it("a run log without runAtMs keeps each run's real start time and lists newest first", async () => {
    const home = tempDir();
    const t0 = Date.UTC(2026, 4, 6, 7, 0);
    const minute = 60_000;
    const iso = (ms: number) => new Date(ms).toISOString();
    write(
      home,
      "cron/runs/brief.jsonl",
      [
        // Appended when each run finished: a long run finishes after a later, shorter one.
        { ts: t0 + minute, durationMs: minute, status: "ok" },
        { startedAtMs: t0 + 120 * minute, finishedAtMs: t0 + 121 * minute, status: "ok" },
        { finishedAt: iso(t0 + 150 * minute), durationMs: 90 * minute, status: "error" },
        { timestamp: iso(t0 + 180 * minute), status: "skipped" },
      ]
        .map((line) => JSON.stringify({ jobId: "brief", action: "finished", ...line }))
        .join("\n"),
    );
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.sources.map((s) => [s.path, s.status, s.records])).toEqual([
      ["cron/runs/brief.jsonl", "imported", 4],
    ]);
    const state = openStateHome({ home, create: false });
    expect(state.cron.logs.list("brief").map((r) => [iso(r.ranAt), r.status])).toEqual([
      [iso(t0 + 180 * minute), "skipped"],
      [iso(t0 + 120 * minute), "ok"],
      [iso(t0 + 60 * minute), "error"],
      [iso(t0), "ok"],
    ]);
    state.close();
  });

  it("a 0-byte jobs.json and an empty registry import nothing and are removed", async () => {
    const home = tempDir();
    write(home, "cron/jobs.json", "");
    write(home, "subagents/runs.json", '{\n  "version": 2,\n  "runs": {}\n}\n');
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.sources.map((s) => [s.path, s.status, s.records])).toEqual([
      ["cron/jobs.json", "imported", 0],
      ["subagents/runs.json", "imported", 0],
    ]);
    expect(existsSync(join(home, "cron/jobs.json"))).toBe(false);
  });

  it("a rerun after an interrupted run adds no run, job or subagent twice", async () => {
    const home = tempDir();
    write(
      home,
      "cron/jobs.json",
      JSON.stringify({
        version: 1,
        jobs: [{ id: "a", schedule: { kind: "every", everyMs: 1000 } }],
      }),
    );
    write(home, "cron/runs/a.jsonl", `${[1, 2, 3].map((i) => run("a", i * 1000)).join("\n")}\n`);
    write(
      home,
      "subagents/runs.json",
      JSON.stringify({ version: 2, runs: { r1: { runId: "r1", task: "t", endedAt: 9 } } }),
    );
    await runDoctorFix({ home, backup: noBackup, keepSources: true });
    // What a kill between the rows' commit and the ledger's commit leaves: rows without a ledger.
    const state = openStateHome({ home, create: false });
    state.db.exec("DELETE FROM migration_sources; DELETE FROM migration_runs;");
    state.close();
    const again = await runDoctorFix({ home, backup: noBackup, keepSources: true });
    expect(again.sources.map((s) => [s.path, s.status, s.records, s.alreadyPresent])).toEqual([
      ["cron/jobs.json", "imported", 1, 1],
      ["cron/runs/a.jsonl", "imported", 3, 3],
      ["subagents/runs.json", "imported", 1, 1],
    ]);
    expect(count(home, "cron_jobs")).toBe(1);
    expect(count(home, "cron_run_logs")).toBe(3);
    expect(count(home, "subagent_runs")).toBe(1);
  });

  it("never takes an ended subagent run back to an older unfinished copy", async () => {
    const home = tempDir();
    const state = openStateHome({ home });
    state.subagents.upsert({ runId: "r1", createdAt: 1, endedAt: 50, outcome: { status: "ok" } });
    state.close();
    write(
      home,
      "subagents/runs.json",
      JSON.stringify({
        version: 2,
        runs: { r1: { runId: "r1", createdAt: 1 }, r2: { task: "x" } },
      }),
    );
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.sources[0]).toMatchObject({ status: "imported", records: 2, alreadyPresent: 1 });
    const after = openStateHome({ home, create: false });
    expect(after.subagents.get("r1")).toMatchObject({ endedAt: 50 });
    expect(after.subagents.get("r2")?.record.task).toBe("x");
    after.close();
  });
});
