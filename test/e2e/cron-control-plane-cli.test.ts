import { beforeAll, describe, expect, it } from "vitest";
import { openControlPlane } from "../../src/control-plane/open-control-plane.js";
import { freshDatabase, withClient } from "../../src/control-plane/test-support/control-planes.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const clusterUrl = usePostgres();
beforeAll(requireBuild);

describe("agentstate cron on a PostgreSQL control plane", () => {
  it("lists the jobs and a job's runs from the control plane the flag or the variable names", async () => {
    const url = await freshDatabase(clusterUrl(), "cron_cli");
    const cp = await openControlPlane({ url });
    try {
      await cp.cron.add({
        id: "morning",
        agentId: "main",
        schedule: { kind: "cron", expr: "30 6 * * 1-5", tz: "Europe/Berlin" },
      });
      await cp.cron.add({ id: "poll", schedule: { kind: "every", everyMs: 3_600_000 } });
      for (const [i, status] of (["ok", "error", "ok"] as const).entries()) {
        await cp.cron.recordRun("morning", {
          status,
          ranAt: Date.UTC(2026, 10, 20 + i, 5, 30),
          durationMs: 10 + i,
          ...(status === "error" ? { error: "model timeout" } : {}),
        });
      }
    } finally {
      await cp.close();
    }
    // The rows as PostgreSQL holds them: the oracle for what the CLI prints.
    const ids = await withClient(url, async (c) => {
      const { rows } = await c.query("SELECT job_id FROM cron_jobs ORDER BY job_id");
      return rows.map((r) => r.job_id);
    });
    const list = cli(["cron", "list", "--control-plane", url, "--json"]);
    expect(list.status, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).map((j: { jobId: string }) => j.jobId)).toEqual(ids);

    const byEnv = cli(["cron", "list", "--agent", "main"], { AGENTSTATE_CONTROL_PLANE: url });
    expect(byEnv.status, byEnv.stderr).toBe(0);
    expect(byEnv.stdout).toMatch(
      /morning\s+-\s+main\s+yes\s+cron 30 6 \* \* 1-5 \(Europe\/Berlin\)/,
    );
    expect(byEnv.stdout).not.toMatch(/\bpoll\b/);

    const runs = cli(["cron", "runs", "morning", "--control-plane", url, "--limit", "2", "--json"]);
    expect(runs.status, runs.stderr).toBe(0);
    const page = JSON.parse(runs.stdout) as { status: string; ranAt: number }[];
    expect(page.map((r) => [r.status, r.ranAt])).toEqual([
      ["ok", Date.UTC(2026, 10, 22, 5, 30)],
      ["error", Date.UTC(2026, 10, 21, 5, 30)],
    ]);
    const text = cli(["cron", "runs", "morning", "--control-plane", url, "--limit", "2"]);
    expect(text.stdout).toMatch(/more: --before \d+/);

    const missing = cli(["cron", "runs", "nope", "--control-plane", url]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toContain('no cron job "nope" in the control plane');
  });
});
