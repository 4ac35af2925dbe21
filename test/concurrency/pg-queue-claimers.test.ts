import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { openControlPlane } from "../../src/control-plane/open-control-plane.js";
import { withClient } from "../../src/control-plane/test-support/control-planes.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { requireBuild } from "../support/built.js";

const CLAIMER = fileURLToPath(new URL("../fixtures/pg-queue-claimer.mjs", import.meta.url));
const QUEUE = "outbound-delivery";
const ENTRIES = 2_000;
const LEASE_MS = 1_000;

const clusterUrl = usePostgres();

/** A claimer process and the ids it printed as acked, line by line, as they come. */
function startClaimer(url: string, owner: string) {
  const child: ChildProcess = spawn(
    process.execPath,
    [CLAIMER, url, QUEUE, owner, String(LEASE_MS)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const acked: string[] = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (buffered + chunk.toString("utf8")).split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith("acked ")) acked.push(line.slice(6));
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, acked, exited };
}

describe("delivery queue on PostgreSQL under two claimer processes", () => {
  beforeAll(() => requireBuild());

  it("delivers every one of 2,000 entries and acks none twice when one claimer is killed with -9", async () => {
    const url = clusterUrl();
    const cp = await openControlPlane({ url });
    for (let i = 0; i < ENTRIES; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          cp.queue.enqueue(QUEUE, {
            id: `e${String(i + j).padStart(5, "0")}`,
            payload: { n: i + j },
          }),
        ),
      );
    }
    await cp.close();
    await withClient(url, (c) =>
      c.query("CREATE TABLE test_deliveries (id text NOT NULL, owner text NOT NULL)"),
    );

    const victim = startClaimer(url, "victim");
    const survivor = startClaimer(url, "survivor");
    while (victim.acked.length < 300) await new Promise((resolve) => setTimeout(resolve, 5));
    victim.child.kill("SIGKILL");
    expect((await victim.exited).signal).toBe("SIGKILL");
    expect(await survivor.exited).toEqual({ code: 0, signal: null });

    // Both claimers really worked, and the victim died before the queue was drained.
    expect(victim.acked.length).toBeLessThan(ENTRIES / 2);
    expect(survivor.acked.length).toBeGreaterThan(ENTRIES / 2);
    const acks = [...victim.acked, ...survivor.acked];
    expect(new Set(acks).size).toBe(acks.length);

    await withClient(url, async (c) => {
      const one = async (sql: string) => Number((await c.query(sql)).rows[0].n);
      // Every entry was delivered and settled; nothing is left pending, leased or dead.
      expect(
        await one("SELECT count(*) AS n FROM delivery_queue_entries WHERE status = 'sent'"),
      ).toBe(ENTRIES);
      expect(
        await one("SELECT count(*) AS n FROM delivery_queue_entries WHERE status <> 'sent'"),
      ).toBe(0);
      expect(await one("SELECT count(DISTINCT id) AS n FROM test_deliveries")).toBe(ENTRIES);
      // A second delivery is only ever of an entry the victim took and died holding (at least
      // once, never more than the one lease it held): the survivor never got an entry twice.
      const { rows } = await c.query(
        "SELECT id, array_agg(owner ORDER BY owner) AS owners FROM test_deliveries GROUP BY id HAVING count(*) > 1",
      );
      expect(rows.length).toBeLessThanOrEqual(1);
      for (const row of rows) expect(row.owners).toEqual(["survivor", "victim"]);
    });
  });
});
