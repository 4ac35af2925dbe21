import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { openControlPlane } from "../../src/control-plane/open-control-plane.js";
import { withClient } from "../../src/control-plane/test-support/control-planes.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { requireBuild } from "../support/built.js";

const STARTER = fileURLToPath(new URL("../fixtures/pg-task-starter.mjs", import.meta.url));
const TASKS = 600;

const clusterUrl = usePostgres();

/** A task-starter process and the task ids it printed as started, line by line, as they come. */
function startStarter(url: string, owner: string) {
  const child: ChildProcess = spawn(process.execPath, [STARTER, url, owner], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const started: string[] = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (buffered + chunk.toString("utf8")).split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith("started ")) started.push(line.slice(8));
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, started, exited };
}

describe("task runs on PostgreSQL under two starter processes", () => {
  beforeAll(() => requireBuild());

  it("starts every one of 600 queued tasks exactly once when one starter is killed with -9", async () => {
    const url = clusterUrl();
    const cp = await openControlPlane({ url });
    for (let i = 0; i < TASKS; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          cp.tasks.create({ taskId: `t${String(i + j).padStart(4, "0")}`, runtime: "subagent" }),
        ),
      );
    }
    await cp.close();
    await withClient(url, (c) =>
      c.query("CREATE TABLE test_starts (task_id text NOT NULL, owner text NOT NULL)"),
    );

    const victim = startStarter(url, "victim");
    const survivor = startStarter(url, "survivor");
    while (victim.started.length < 100) await new Promise((resolve) => setTimeout(resolve, 5));
    victim.child.kill("SIGKILL");
    expect((await victim.exited).signal).toBe("SIGKILL");
    expect(await survivor.exited).toEqual({ code: 0, signal: null });

    // Both starters really worked, and the victim died before the tasks ran out.
    expect(victim.started.length).toBeLessThan(TASKS / 2);
    expect(survivor.started.length).toBeGreaterThan(TASKS / 2);
    const started = [...victim.started, ...survivor.started];
    expect(new Set(started).size).toBe(started.length);

    await withClient(url, async (c) => {
      const one = async (sql: string) => Number((await c.query(sql)).rows[0].n);
      // None lost: nothing is left queued, and every task names the one host that started it.
      expect(await one("SELECT count(*) AS n FROM task_runs WHERE status = 'queued'")).toBe(0);
      expect(
        await one(
          "SELECT count(*) AS n FROM task_runs WHERE record_json::json->>'startedBy' IN ('victim', 'survivor')",
        ),
      ).toBe(TASKS);
      // None started twice: one start per task, by the host its row names.
      expect(await one("SELECT count(*) AS n FROM test_starts")).toBe(
        await one("SELECT count(DISTINCT task_id) AS n FROM test_starts"),
      );
      expect(
        await one(
          `SELECT count(*) AS n FROM test_starts s JOIN task_runs t USING (task_id)
           WHERE t.record_json::json->>'startedBy' = s.owner`,
        ),
      ).toBe(await one("SELECT count(*) AS n FROM test_starts"));
      // Only the task the victim was working on when it died can be left running, and it is its.
      const { rows } = await c.query(
        "SELECT task_id, record_json FROM task_runs WHERE status <> 'succeeded'",
      );
      expect(rows.length).toBeLessThanOrEqual(1);
      for (const row of rows) expect(JSON.parse(row.record_json)).toEqual({ startedBy: "victim" });
      expect(
        await one(
          "SELECT count(*) AS n FROM task_runs WHERE status = 'succeeded' AND started_at IS NOT NULL",
        ),
      ).toBe(TASKS - rows.length);
    });
  });
});
