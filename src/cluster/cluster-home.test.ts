import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { openControlPlane } from "../control-plane/open-control-plane.js";
import { freshDatabase, withClient } from "../control-plane/test-support/control-planes.js";
import { isStateError } from "../db/errors.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { agentDbRelativePath } from "../home-paths.js";
import { usePostgres } from "../test-support/postgres.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { type ClusterHome, openClusterHome } from "./cluster-home.js";
import { litestreamBinary } from "./litestream-binary.js";
import { lz4DecodedLength } from "./lz4-frame.js";

const clusterUrl = usePostgres();
const tempDir = useTempDirs();
const opened: ClusterHome[] = [];
afterEach(async () => {
  for (const home of opened.splice(0)) await home.close();
});

async function host(name: string, controlPlane: string, replicas: string, maxAgents = 10) {
  const home = await openClusterHome({
    home: tempDir(),
    cluster: { controlPlane, host: name, replicas, leaseMs: 1_500, syncIntervalMs: 200, maxAgents },
  });
  opened.push(home);
  return home;
}

/** Events in the agent's database file, counted over a connection of its own. */
function eventsIn(home: ClusterHome, agentId: string): string[] {
  const raw = openRawSqlite(join(home.path, agentDbRelativePath(agentId)), { readonly: true });
  try {
    const rows = raw.prepare("SELECT event_json FROM transcript_events ORDER BY seq").all();
    return rows
      .map(
        (r) =>
          JSON.parse((r as { event_json: string }).event_json) as { type: string; text?: string },
      )
      .filter((e) => e.type === "note")
      .map((e) => e.text as string);
  } finally {
    raw.close();
  }
}

describe("cluster homes: one owner per agent, replicated off-host", () => {
  it("hands an agent over: the second host restores the first's replica and writes under a new epoch", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const replicas = tempDir();
    const a = await host("a", url, replicas);
    const b = await host("b", url, replicas);
    const onA = await a.openAgent("x");
    expect(onA.lease).toMatchObject({ agentId: "x", host: "a", epoch: 1 });
    for (let i = 0; i < 5; i++) onA.transcripts.append("s1", { type: "note", text: `a${i}` });
    await onA.durable();
    expect(existsSync(join(replicas, "x", "e1", "generations"))).toBe(true);

    await expect(b.openAgent("x")).rejects.toMatchObject({ code: "E_NOT_OWNER" });
    expect(() => b.agent("x")).toThrow(expect.objectContaining({ code: "E_NOT_OWNER" }));
    expect(await onA.release()).toBe(true);
    expect(() => onA.transcripts.append("s1", { type: "note", text: "late" })).toThrow();

    const onB = await b.openAgent("x");
    expect(onB.lease.epoch).toBe(2);
    expect(eventsIn(b, "x")).toEqual(["a0", "a1", "a2", "a3", "a4"]);
    onB.transcripts.append("s1", { type: "note", text: "b0" });
    await onB.durable();
    expect(existsSync(join(replicas, "x", "e2", "generations"))).toBe(true);
    await onB.release();

    // a's own file is now older than the replica: a restores b's epoch before writing.
    const back = await a.openAgent("x");
    expect(back.lease.epoch).toBe(3);
    expect(eventsIn(a, "x")).toEqual(["a0", "a1", "a2", "a3", "a4", "b0"]);
  }, 60_000);

  it("registers each agent it takes in the shared control plane; a release records its size there, a takeover keeps createdAt", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const replicas = tempDir();
    const a = await host("a", url, replicas);
    const b = await host("b", url, replicas);
    const reader = await openControlPlane({ url });
    try {
      const takenAt = Date.now();
      const onA = await a.openAgent("x");
      const taken = await reader.agents.get("x");
      expect(taken).toMatchObject({ agentId: "x", path: agentDbRelativePath("x") });
      expect(taken?.createdAt).toBeGreaterThanOrEqual(takenAt);
      for (let i = 0; i < 50; i++) onA.transcripts.append("s1", { type: "note", text: `a${i}` });
      const releasedAt = Date.now();
      expect(await onA.release()).toBe(true);
      const released = await reader.agents.get("x");
      expect(released?.sizeBytes).toBeGreaterThan(0);
      expect(released?.sizeBytes).toBeGreaterThan(taken?.sizeBytes ?? 0);
      expect(released?.lastSeenAt).toBeGreaterThanOrEqual(releasedAt);
      // Read behind the control plane's back too: the row a separate connection sees.
      const rows = await withClient(url, (c) =>
        c.query("SELECT size_bytes FROM agent_databases WHERE agent_id = 'x'"),
      );
      expect(Number(rows.rows[0].size_bytes)).toBe(released?.sizeBytes);

      const movedAt = Date.now();
      await b.openAgent("x");
      const moved = await reader.agents.get("x");
      expect(moved?.createdAt).toBe(taken?.createdAt);
      expect(moved?.updatedAt).toBeGreaterThanOrEqual(movedAt);
      expect((await reader.agents.list()).map((agent) => agent.agentId)).toEqual(["x"]);
    } finally {
      await reader.close();
    }
  });

  it("a release ships the last commits before the lease goes: the next owner has them without durable()", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const replicas = tempDir();
    const a = await host("a", url, replicas);
    const b = await host("b", url, replicas);
    const onA = await a.openAgent("x");
    for (let i = 0; i < 20; i++) onA.transcripts.append("s1", { type: "note", text: `a${i}` });
    expect(await onA.release()).toBe(true);
    await b.openAgent("x");
    expect(eventsIn(b, "x")).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
  }, 30_000);

  it("durable() follows the WAL as it starts over: every commit it vouched for is in a restore of the replica", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const replicas = tempDir();
    const a = await host("a", url, replicas);
    const agent = await a.openAgent("x");
    const text = "w".repeat(200_000);
    for (let i = 0; i < 40; i++) {
      agent.transcripts.append("s1", { type: "note", text: `${i}:${text}` });
      if (i % 4 === 3) await agent.durable();
    }
    const wal = readdirSync(join(replicas, "x", "e1", "generations")).flatMap((g) =>
      readdirSync(join(replicas, "x", "e1", "generations", g, "wal")),
    );
    // The WAL started over at least once (a second index) while durable() was in use.
    expect(new Set(wal.map((f) => f.slice(0, 8))).size).toBeGreaterThan(1);
    const restored = join(tempDir(), "restored.sqlite");
    execFileSync(litestreamBinary(), [
      "restore",
      "-o",
      restored,
      pathToFileURL(join(replicas, "x", "e1")).href,
    ]);
    const raw = openRawSqlite(restored, { readonly: true });
    const count = raw
      .prepare("SELECT count(*) AS n FROM transcript_events WHERE event_json LIKE '%\"note\"%'")
      .get();
    raw.close();
    expect(count).toEqual({ n: 40 });
  }, 60_000);

  it("two openAgent calls at once for one agent share one opening", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const a = await host("a", url, tempDir());
    const [first, second] = await Promise.all([a.openAgent("x"), a.openAgent("x")]);
    expect(second).toBe(first);
    expect(a.agentPool.pinned).toBe(1);
  }, 30_000);

  it("owns at most maxAgents agents: one more is E_BUSY and its lease is not taken", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const a = await host("a", url, tempDir(), 1);
    await a.openAgent("x");
    await expect(a.openAgent("y")).rejects.toMatchObject({ code: "E_BUSY" });
    expect(await a.controlPlane.leases.owner("y")).toBeUndefined();
  }, 30_000);

  it("refuses writes past the local lease deadline with E_LEASE_LOST, before any network call", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const a = await host("a", url, tempDir());
    const agent = await a.openAgent("x");
    expect([a.serves("x"), a.serves("y")]).toEqual([true, false]);
    agent.transcripts.append("s1", { type: "note", text: "in time" });
    // The control plane goes away: renewals fail, and the deadline runs out by itself.
    await a.controlPlane.close();
    await new Promise((r) => setTimeout(r, 1_600));
    const error = (() => {
      try {
        agent.transcripts.append("s1", { type: "note", text: "too late" });
      } catch (e) {
        return e;
      }
    })();
    expect(isStateError(error, "E_LEASE_LOST")).toBe(true);
    // What serves() answers agrees with the write guard: no request would be served stale.
    expect(a.serves("x")).toBe(false);
    // A single-statement write outside any transaction is refused too.
    expect(() => agent.kv.set("scope", "key", 1)).toThrow(
      expect.objectContaining({ code: "E_LEASE_LOST" }),
    );
    expect(eventsIn(a, "x")).toEqual(["in time"]);
    const raw = openRawSqlite(join(a.path, agentDbRelativePath("x")), { readonly: true });
    expect(raw.prepare("SELECT count(*) AS n FROM kv").get()).toEqual({ n: 0 });
    raw.close();
  }, 30_000);

  it("reports each agent's replica lag after its renewals: growing while Litestream is stopped, 0 once it caught up", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const a = await host("a", url, tempDir());
    const agent = await a.openAgent("x");
    agent.transcripts.append("s1", { type: "note", text: "one" });
    await agent.durable();
    const row = async () =>
      withClient(url, async (c) => {
        const { rows } = await c.query(
          "SELECT replica_lag_ms::int AS lag, replica_checked_at::float8 AS at FROM agent_leases WHERE agent_id = 'x'",
        );
        return rows[0] as { lag: number | null; at: number | null };
      });
    const reportAfter = async (since: number) => {
      for (;;) {
        const seen = await row();
        if (seen.at !== null && seen.at > since) return seen;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    expect((await reportAfter(Date.now())).lag).toBe(0);
    const pid = a.replicatorPid as number;
    process.kill(pid, "SIGSTOP");
    try {
      const wroteAt = Date.now();
      agent.transcripts.append("s1", { type: "note", text: "two" });
      await reportAfter(wroteAt); // The renewal that first sees the commit.
      await new Promise((r) => setTimeout(r, 1_200));
      const checkedFrom = Date.now();
      const behind = await reportAfter(checkedFrom);
      // Seen at a renewal after the write, at most one renewal interval (500 ms) late.
      expect(behind.lag).toBeGreaterThanOrEqual(checkedFrom - wroteAt - 500);
      expect(behind.lag).toBeLessThanOrEqual((behind.at as number) - wroteAt);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await agent.durable();
    expect((await reportAfter(Date.now())).lag).toBe(0);
  }, 30_000);

  it("keeps SQLite's locks on the WAL index while durable() reads it", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const a = await host("a", url, tempDir());
    const agent = await a.openAgent("x");
    const shm = `${join(a.path, agentDbRelativePath("x"))}-shm`;
    // This process's POSIX locks on the -shm, from the kernel's own table.
    const { ino } = statSync(shm);
    const locks = () =>
      readFileSync("/proc/locks", "utf8")
        .split("\n")
        .filter((line) => {
          const fields = line.trim().split(/\s+/);
          const at = fields.indexOf("POSIX");
          return (
            at >= 0 &&
            fields[at + 3] === String(process.pid) &&
            fields[at + 4]?.split(":")[2] === String(ino)
          );
        }).length;
    agent.transcripts.append("s1", { type: "note", text: "one" });
    const before = locks();
    expect(before).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) {
      agent.transcripts.append("s1", { type: "note", text: `more ${i}` });
      await agent.durable();
    }
    expect(locks()).toBe(before);
  }, 30_000);

  it("reads the length of Litestream's WAL segments from their LZ4 frames, as Litestream logs it", async () => {
    const url = await freshDatabase(clusterUrl(), "cluster");
    const replicas = tempDir();
    const a = await host("a", url, replicas);
    const agent = await a.openAgent("x");
    for (let i = 0; i < 3; i++) {
      agent.transcripts.append("s1", { type: "note", text: `n${i}`.repeat(500 * (i + 1)) });
      await agent.durable();
    }
    // Litestream's own log says how many WAL bytes each segment it wrote holds.
    const log = readFileSync(join(a.path, "cluster", "litestream.log"), "utf8");
    const logged = [
      ...log.matchAll(/wal segment written".*position=\w+\/([0-9a-f]{8}):(\d+) .*sz=(\d+)/g),
    ].map((m) => ({
      index: Number.parseInt(m[1] as string, 16),
      offset: Number(m[2]),
      size: Number(m[3]),
    }));
    expect(logged.length).toBeGreaterThan(0);
    const prefix = join(replicas, "x", "e1", "generations");
    const [generation] = readdirSync(prefix);
    for (const { index, offset, size } of logged) {
      const name = `${index.toString(16).padStart(8, "0")}_${offset.toString(16).padStart(8, "0")}.wal.lz4`;
      const file = readFileSync(join(prefix, generation as string, "wal", name));
      expect(lz4DecodedLength(file)).toBe(size);
    }
  }, 30_000);
});

describe("litestreamBinary", () => {
  it("finds the installed v0.3.13 binary", async () => {
    const out = await new Promise<string>((resolve) => {
      const child = spawn(litestreamBinary(), ["version"]);
      let text = "";
      child.stdout.on("data", (d) => {
        text += d;
      });
      child.on("exit", () => resolve(text));
    });
    expect(out.trim()).toBe("v0.3.13");
  });
});
