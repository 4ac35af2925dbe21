import { beforeAll, describe, expect, it } from "vitest";
import { openControlPlane } from "../../src/control-plane/open-control-plane.js";
import { freshDatabase } from "../../src/control-plane/test-support/control-planes.js";
import { openStateHome } from "../../src/home.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const clusterUrl = usePostgres();
const tempDir = useTempDirs();
beforeAll(requireBuild);

/**
 * Two hosts' leases, one released, one lag report, one agent registered with its size, and a
 * queue with one entry claimed.
 */
async function seed(options: { url: string } | { home: string }) {
  const cp = await openControlPlane(options);
  try {
    await cp.leases.acquire("x", "host-a", 600_000);
    await cp.leases.acquire("w", "host-a", 600_000);
    await cp.leases.acquire("y", "host-b", 600_000);
    const z = await cp.leases.acquire("z", "host-b", 600_000);
    await cp.leases.release("z", "host-b", z.epoch);
    await cp.leases.report("host-a", [{ agentId: "x", epoch: 1, lagMs: 2_500 }]);
    await cp.agents.register("x", {
      path: "agents/x/agent/agent.sqlite",
      schemaVersion: 1,
      sizeBytes: 1,
    });
    await cp.agents.refresh("x", { sizeBytes: 20_480 });
    await cp.queue.enqueue("outbound", { id: "m1", payload: {} });
    await cp.queue.enqueue("outbound", { id: "m2", payload: {} });
    await cp.queue.claim("outbound", "worker-1");
  } finally {
    await cp.close();
  }
}

function expectSeeded(report: Record<string, unknown>, backend: string) {
  expect(report.backend).toBe(backend);
  expect(report.hosts).toEqual([
    { host: "host-a", agents: 2, nextExpiry: expect.any(Number), worstLagMs: 2_500 },
    { host: "host-b", agents: 1, nextExpiry: expect.any(Number), worstLagMs: null },
  ]);
  const agents = report.agents as {
    agentId: string;
    host: string | null;
    live: boolean;
    sizeBytes: number | null;
  }[];
  expect(agents.map((a) => [a.agentId, a.host, a.live, a.sizeBytes])).toEqual([
    ["w", "host-a", true, null],
    ["x", "host-a", true, 20_480],
    ["y", "host-b", true, null],
    ["z", null, false, null],
  ]);
  expect(report.queues).toEqual([{ queue: "outbound", pending: 1, leased: 1, failed: 0 }]);
}

describe("agentstate cluster status", () => {
  it("reads a PostgreSQL control plane: hosts, leases with replica lag, queue depths", async () => {
    const url = await freshDatabase(clusterUrl(), "status");
    await seed({ url });
    const json = cli(["cluster", "status", "--control-plane", url, "--json"]);
    expect(json.status, json.stderr).toBe(0);
    expectSeeded(JSON.parse(json.stdout), "postgres");

    const text = cli(["cluster", "status"], { AGENTSTATE_CONTROL_PLANE: url });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/control plane: postgres/);
    expect(text.stdout).toMatch(/host-a\s+2\s+2\.5 s\s+in \d+\.\d min/);
    expect(text.stdout).toMatch(
      /x\s+host-a\s+1\s+held, \d+\.\d min left\s+2\.5 s \(seen [\d.]+ m?s ago\)\s+20 KiB/,
    );
    expect(text.stdout).toMatch(/z\s+-\s+1\s+released\s+-\s+-/);
    expect(text.stdout).toMatch(/outbound\s+1\s+1\s+0/);
  });

  it("reads a home's own control plane without a server, and says when no agent is leased", async () => {
    const home = tempDir();
    const missing = cli(["cluster", "status", "--home", home]);
    expect(missing.status).toBe(3);
    openStateHome({ home }).close();
    const empty = cli(["cluster", "status", "--home", home]);
    expect(empty.status, empty.stderr).toBe(0);
    expect(empty.stdout).toMatch(/control plane: sqlite\s+no agent leases/);
    await seed({ home });
    const json = cli(["cluster", "status", "--home", home, "--json"]);
    expect(json.status, json.stderr).toBe(0);
    expectSeeded(JSON.parse(json.stdout), "sqlite");
  });

  it("fails with the server named when the control plane cannot be reached", () => {
    const port = new URL(clusterUrl()).port;
    const closed = clusterUrl().replace(`:${port}/`, ":1/");
    const result = cli(["cluster", "status", "--control-plane", closed]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/PostgreSQL|ECONNREFUSED/);
  });
});
