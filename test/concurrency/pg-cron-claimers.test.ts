import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { openControlPlane } from "../../src/control-plane/open-control-plane.js";
import { withClient } from "../../src/control-plane/test-support/control-planes.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { requireBuild } from "../support/built.js";

const CLAIMER = fileURLToPath(new URL("../fixtures/pg-cron-claimer.mjs", import.meta.url));
const JOBS = 600;
const LEASE_MS = 1_000;
const BATCH = 5;

const clusterUrl = usePostgres();

/** A scheduler process and the job ids it printed as run, line by line, as they come. */
function startClaimer(url: string, owner: string) {
  const child: ChildProcess = spawn(process.execPath, [CLAIMER, url, owner, String(LEASE_MS)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const ran: string[] = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (buffered + chunk.toString("utf8")).split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith("ran ")) ran.push(line.slice(4));
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, ran, exited };
}

describe("cron on PostgreSQL under two scheduler processes", () => {
  beforeAll(() => requireBuild());

  it("runs every one of 600 due jobs, none twice within a claim, when one scheduler is killed with -9", async () => {
    const url = clusterUrl();
    const cp = await openControlPlane({ url });
    const now = Date.now();
    for (let i = 0; i < JOBS; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          cp.cron.add({
            id: `j${String(i + j).padStart(4, "0")}`,
            schedule: { kind: "at", atMs: now - (i + j) },
          }),
        ),
      );
    }
    await cp.close();
    await withClient(url, (c) =>
      c.query(
        "CREATE TABLE test_runs (job_id text NOT NULL, owner text NOT NULL, claim_id text NOT NULL)",
      ),
    );

    const victim = startClaimer(url, "victim");
    const survivor = startClaimer(url, "survivor");
    while (victim.ran.length < 100) await new Promise((resolve) => setTimeout(resolve, 5));
    victim.child.kill("SIGKILL");
    expect((await victim.exited).signal).toBe("SIGKILL");
    expect(await survivor.exited).toEqual({ code: 0, signal: null });

    // Both schedulers really worked, and the victim died before the jobs ran out.
    expect(victim.ran.length).toBeLessThan(JOBS / 2);
    expect(survivor.ran.length).toBeGreaterThan(JOBS / 2);
    const ran = [...victim.ran, ...survivor.ran];
    expect(new Set(ran).size).toBe(ran.length);

    await withClient(url, async (c) => {
      const one = async (sql: string) => Number((await c.query(sql)).rows[0].n);
      // None lost: every job ran, its run was recorded once, and nothing is left claimed or due.
      expect(await one("SELECT count(DISTINCT job_id) AS n FROM test_runs")).toBe(JOBS);
      expect(await one("SELECT count(DISTINCT job_id) AS n FROM cron_run_logs")).toBe(JOBS);
      expect(await one("SELECT count(*) AS n FROM cron_run_logs")).toBe(JOBS);
      expect(
        await one(
          "SELECT count(*) AS n FROM cron_jobs WHERE next_run_at IS NOT NULL OR claim_id IS NOT NULL",
        ),
      ).toBe(0);
      // No claim ran a job twice; a second run is only of a job the victim had claimed and died
      // holding (one batch at most), run again by the survivor under a new claim.
      expect(await one("SELECT count(DISTINCT claim_id) AS n FROM test_runs")).toBe(
        await one("SELECT count(*) AS n FROM test_runs"),
      );
      const { rows } = await c.query(
        "SELECT job_id, array_agg(owner ORDER BY owner) AS owners FROM test_runs GROUP BY job_id HAVING count(*) > 1",
      );
      expect(rows.length).toBeLessThanOrEqual(BATCH);
      for (const row of rows) expect(row.owners).toEqual(["survivor", "victim"]);
    });
  });
});
