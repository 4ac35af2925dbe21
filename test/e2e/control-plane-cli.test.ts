import { Cron } from "croner";
import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const HOUR = 3_600_000;
const literal = (text: string) => text.replace(/[*#]/g, "\\$&");

function homeWithCron(): string {
  const home = tempDir();
  const state = openStateHome({ home });
  state.cron.add({
    id: "morning",
    name: "Morning brief",
    agentId: "main",
    schedule: { kind: "cron", expr: "30 6 * * 1-5", tz: "Europe/Berlin" },
    payload: { kind: "agentTurn", message: "brief me" },
  });
  state.cron.add({ id: "poll", schedule: { kind: "every", everyMs: HOUR } });
  state.cron.recordRun("morning", {
    status: "ok",
    ranAt: Date.UTC(2026, 10, 20, 5, 30),
    durationMs: 812,
  });
  state.cron.recordRun("morning", {
    status: "error",
    ranAt: Date.UTC(2026, 10, 21, 5, 30),
    durationMs: 40,
    error: "model timeout",
  });
  state.close();
  return home;
}

describe("agentstate cron", () => {
  it("lists jobs as a table and as JSON, filtered by agent", () => {
    const home = homeWithCron();
    const table = cli(["cron", "list", "--home", home]);
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      /morning\s+Morning brief\s+main\s+yes\s+cron 30 6 \* \* 1-5 \(Europe\/Berlin\)/,
    );
    expect(table.stdout).toMatch(/poll\s+-\s+-\s+yes\s+every 1h/);
    const json = JSON.parse(
      cli(["cron", "list", "--agent", "main", "--home", home, "--json"]).stdout,
    );
    expect(json.map((j: { jobId: string }) => j.jobId)).toEqual(["morning"]);
    expect(json[0]).toMatchObject({
      lastStatus: "error",
      lastError: "model timeout",
      consecutiveErrors: 1,
    });
  });

  it("shows the next run croner gives, for croner's syntax and six-field expressions", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    const jobs: [string, string, number][] = [
      ["second-friday", "0 0 * * 5#2", Date.UTC(2026, 4, 2)],
      ["last-day", "0 18 L * *", Date.UTC(2026, 4, 2)],
      ["seconds", "15 30 6 * * *", Date.UTC(2026, 4, 6, 6, 30, 15)],
    ];
    for (const [id, expr, ranAt] of jobs) {
      state.cron.add({ id, schedule: { kind: "cron", expr, tz: "America/New_York" } });
      state.cron.recordRun(id, { status: "ok", ranAt, durationMs: 500 });
    }
    state.close();
    const table = cli(["cron", "list", "--home", home]);
    expect(table.status, table.stderr).toBe(0);
    const listed = JSON.parse(cli(["cron", "list", "--home", home, "--json"]).stdout);
    for (const [id, expr, ranAt] of jobs) {
      const next = new Cron(expr, { timezone: "America/New_York" }).nextRun(new Date(ranAt + 500));
      const iso = next?.toISOString() as string;
      expect(table.stdout).toMatch(new RegExp(`${id}\\s.*cron ${literal(expr)}.*\\s${iso}\\s`));
      expect(listed.find((j: { jobId: string }) => j.jobId === id)?.nextRunAt).toBe(
        next?.getTime(),
      );
    }
  });

  it("shows a job's runs newest first and names an unknown job", () => {
    const home = homeWithCron();
    const runs = JSON.parse(cli(["cron", "runs", "morning", "--home", home, "--json"]).stdout);
    expect(runs.map((r: { status: string }) => r.status)).toEqual(["error", "ok"]);
    expect(cli(["cron", "runs", "morning", "--home", home]).stdout).toMatch(
      /error\s+40ms\s+model timeout/,
    );
    const missing = cli(["cron", "runs", "nope", "--home", home]);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('no cron job "nope"');
  });

  it("lists runs by when they ran, also runs imported after newer ones", () => {
    const home = homeWithCron();
    const state = openStateHome({ home });
    state.cron.logs.importRun("morning", { status: "skipped", ranAt: Date.UTC(2026, 10, 19) });
    state.cron.logs.importRun("morning", { status: "ok", ranAt: Date.UTC(2026, 10, 22) });
    state.close();
    const runs = JSON.parse(cli(["cron", "runs", "morning", "--home", home, "--json"]).stdout);
    expect(runs.map((r: { ranAt: number }) => new Date(r.ranAt).toISOString())).toEqual([
      "2026-11-22T00:00:00.000Z",
      "2026-11-21T05:30:00.000Z",
      "2026-11-20T05:30:00.000Z",
      "2026-11-19T00:00:00.000Z",
    ]);
  });

  it("documents its subcommands", () => {
    for (const args of [
      ["cron", "--help"],
      ["cron", "list", "--help"],
      ["cron", "runs", "--help"],
    ]) {
      const result = cli(args);
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/Usage: agentstate cron/);
    }
  });
});

describe("agentstate gc", () => {
  it("removes expired rows from the global and agent databases, keeping live ones", async () => {
    const home = tempDir();
    const state = openStateHome({ home });
    state.plugins.set("p", "ns", "stale", 1, { ttlMs: 1 });
    state.plugins.set("p", "ns", "live", 2, { ttlMs: 365 * 24 * HOUR });
    state.plugins.set("p", "ns", "forever", 3);
    const agent = state.agent("main");
    agent.cache.set("s", "old", { value: "x", ttlMs: 1 });
    agent.cache.set("s", "new", { value: "y", ttlMs: 365 * 24 * HOUR });
    state.close();
    await new Promise((resolve) => setTimeout(resolve, 10)); // let the 1 ms TTLs lapse

    const result = cli(["gc", "--home", home, "--json"]);
    expect(result.status, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.total).toBe(2);
    expect(
      report.databases.find((d: { agentId: string | null }) => d.agentId === null).tables
        .plugin_state_entries,
    ).toBe(1);
    expect(
      report.databases.find((d: { agentId: string | null }) => d.agentId === "main").tables
        .cache_entries,
    ).toBe(1);

    const after = openStateHome({ home, create: false });
    const keys = after.db
      .prepare<{ entry_key: string }>(
        "SELECT entry_key FROM plugin_state_entries ORDER BY entry_key",
      )
      .all();
    expect(keys.map((k) => k.entry_key)).toEqual(["forever", "live"]);
    expect(after.agent("main").db.prepare("SELECT key FROM cache_entries").all()).toEqual([
      { key: "new" },
    ]);
    after.close();

    const again = cli(["gc", "--home", home]);
    expect(again.stdout).toContain("0 expired rows removed");
  });

  it("refuses a missing home instead of creating one", () => {
    const result = cli(["gc", "--home", `${tempDir()}/nowhere`]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("no agentstate home");
  });
});
