import { beforeAll, describe, expect, it } from "vitest";
import { openControlPlane } from "../../src/control-plane/open-control-plane.js";
import { freshDatabase, withClient } from "../../src/control-plane/test-support/control-planes.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const clusterUrl = usePostgres();
beforeAll(requireBuild);

/** Three dead letters, one retried; a send begun whose lease lapsed; a receipt. */
async function seed(url: string): Promise<void> {
  const cp = await openControlPlane({ url });
  try {
    for (const id of ["d1", "d2", "d3", "u1", "s1"]) {
      await cp.queue.enqueue("out", { id, payload: id, sessionKey: "agent:main:main" });
      const held = await cp.queue.claim("out", "w");
      const leaseId = held?.leaseId as string;
      if (id === "s1") await cp.queue.settle("out", id, leaseId, { platformMessageId: "m1" });
      else if (id !== "u1")
        await cp.queue.fail("out", id, leaseId, `down ${id}`, { permanent: true });
      else {
        // The holder's lease lapses 1 ms into its send: the send's outcome is unknown.
        await cp.queue.beginSend("out", id, leaseId);
        await cp.queue.extend("out", id, leaseId, 1);
      }
    }
    await cp.queue.retry("out", "d2");
  } finally {
    await cp.close();
  }
  await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("agentstate deliveries on a PostgreSQL control plane", () => {
  it("lists dead letters, unknown sends and receipts from the control plane the flag or the variable names", async () => {
    const url = await freshDatabase(clusterUrl(), "deliveries_cli");
    await seed(url);
    // The rows as PostgreSQL holds them: the oracle for what the CLI prints.
    const failed = await withClient(url, async (c) => {
      const { rows } = await c.query(`SELECT id FROM delivery_queue_entries
        WHERE status = 'failed' ORDER BY failed_at, id`);
      return rows.map((r) => r.id);
    });
    expect(failed).toEqual(["d1", "d3"]);
    const list = cli([
      "deliveries",
      "--queue",
      "out",
      "--state",
      "failed",
      "--control-plane",
      url,
      "--json",
    ]);
    expect(list.status, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).map((e: { id: string }) => e.id)).toEqual(failed);

    const page = cli(["deliveries", "--queue", "out", "--state", "failed", "--limit", "1"], {
      AGENTSTATE_CONTROL_PLANE: url,
    });
    expect(page.status, page.stderr).toBe(0);
    expect(page.stdout).toMatch(/d1\s+failed/);
    expect(page.stdout).toContain("more: --limit 2");

    const unknown = cli(["deliveries", "--state", "unknown", "--control-plane", url, "--json"]);
    expect(unknown.status, unknown.stderr).toBe(0);
    expect(JSON.parse(unknown.stdout).map((e: { id: string }) => e.id)).toEqual(["u1"]);

    const sent = cli(["deliveries", "--session-key", "agent:main:main", "--state", "sent"], {
      AGENTSTATE_CONTROL_PLANE: url,
    });
    expect(sent.status, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/s1\s+sent/);

    const vague = cli(["deliveries", "--control-plane", url]);
    expect(vague.status).toBe(2);
    expect(vague.stderr).toContain("deliveries needs --session-key");
  });
});
