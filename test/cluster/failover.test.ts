import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { litestreamBinary } from "../../src/cluster/litestream-binary.js";
import { freshDatabase, withClient } from "../../src/control-plane/test-support/control-planes.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { agentDbRelativePath } from "../../src/home-paths.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { HostProcess, type Line } from "./host-process.js";

const LEASE_MS = 2_000;
const SYNC_MS = 1_000;
const clusterUrl = usePostgres();
const tempDir = useTempDirs();
const hosts: HostProcess[] = [];
const sidecars: number[] = [];
beforeAll(() => requireBuild());
afterEach(() => {
  for (const host of hosts.splice(0)) host.kill();
  for (const pid of sidecars.splice(0)) killQuietly(pid, "SIGKILL");
});

function killQuietly(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone already.
  }
}

function startHost(host: string, controlPlane: string, replicas: string, home = tempDir()) {
  const process_ = new HostProcess({
    home,
    host,
    controlPlane,
    replicas,
    leaseMs: LEASE_MS,
    syncMs: SYNC_MS,
  });
  hosts.push(process_);
  return { home, process: process_ };
}

async function open(host: HostProcess, agent: string): Promise<Line> {
  const answer = await host.send({ op: "open", agent });
  if (answer.ok && typeof answer.litestreamPid === "number") sidecars.push(answer.litestreamPid);
  return answer;
}

/** Keeps trying to win the agent (for 30 s at most); the time it took, from `since`. */
async function takeOver(
  host: HostProcess,
  agent: string,
  since: number,
): Promise<Line & { tookMs: number }> {
  const until = Date.now() + 30_000;
  for (;;) {
    const answer = await open(host, agent);
    if (answer.ok) return { ...answer, tookMs: Date.now() - since };
    expect(answer.code).toBe("E_NOT_OWNER");
    if (Date.now() > until) throw new Error(`still not the owner after 30 s: ${answer.message}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The note texts in a database file, read over a connection of the test's own. */
function notesIn(path: string): string[] {
  const raw = openRawSqlite(path, { readonly: true });
  try {
    return raw
      .prepare("SELECT event_json FROM transcript_events ORDER BY seq")
      .all()
      .map(
        (r) =>
          JSON.parse((r as { event_json: string }).event_json) as { type: string; text: string },
      )
      .filter((e) => e.type === "note")
      .map((e) => e.text);
  } finally {
    raw.close();
  }
}

function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) resolve();
      else if (Date.now() > until) reject(new Error("timed out"));
      else setTimeout(poll, 20);
    };
    poll();
  });
}

describe("failover between host processes (PostgreSQL, Litestream, kill -9, SIGSTOP)", () => {
  it("a host killed with -9 loses no durable event, and another takes its agent within lease + 5 s", async () => {
    const url = await freshDatabase(clusterUrl(), "failover");
    const replicas = tempDir();
    const a = startHost("a", url, replicas);
    const opened = await open(a.process, "x");
    expect(opened).toMatchObject({ ok: true, epoch: 1 });
    await a.process.start({ op: "stream", agent: "x", every: 25 });
    await waitFor(() => a.process.events.filter((e) => "durable" in e).length >= 10, 20_000);
    await new Promise((r) => setTimeout(r, 300)); // Some acknowledged, not yet durable.
    a.process.kill("SIGKILL");
    killQuietly(opened.litestreamPid as number, "SIGKILL");
    const killedAt = Date.now();
    const acks = a.process.events
      .filter((e) => "acked" in e)
      .map((e) => ({ index: e.acked as number, at: e.at as number }));
    const durable = Math.max(
      ...a.process.events.filter((e) => "durable" in e).map((e) => e.durable as number),
    );

    const b = startHost("b", url, replicas);
    const won = await takeOver(b.process, "x", killedAt);
    expect(won.epoch).toBe(2);
    expect(
      await b.process.send({ op: "append", agent: "x", text: "b0", durable: true }),
    ).toMatchObject({ ok: true });
    const tookMs = Date.now() - killedAt;
    expect(tookMs).toBeLessThan(LEASE_MS + 5_000);

    const notes = notesIn(join(b.home, agentDbRelativePath("x")));
    const survived = notes.filter((n) => n !== "b0").map((n) => Number(n.slice(1)));
    // A prefix of what a acknowledged, holding every event that passed durable().
    expect(survived).toEqual(Array.from({ length: survived.length }, (_, i) => i));
    expect(survived.length).toBeGreaterThan(durable);
    const lost = acks.slice(survived.length);
    const span = (acks.at(-1)?.at as number) - (acks[0]?.at as number);
    const perSecond = Math.round((acks.length * 1000) / span);
    const lostWindowMs = lost.length === 0 ? 0 : killedAt - (lost[0]?.at as number);
    console.log(
      `failover: ${acks.length} acknowledged (${perSecond}/s), durable through e${durable}, ${lost.length} lost (the last ${lostWindowMs} ms of writes), writable on b ${tookMs} ms after the kill`,
    );
    // Litestream reads the WAL once a second, then ships within its sync interval.
    expect(lostWindowMs).toBeLessThanOrEqual(1_000 + SYNC_MS + 500);
  }, 90_000);

  it("a host stopped past its lease gets E_LEASE_LOST when resumed; none of its writes reach the new owner", async () => {
    const url = await freshDatabase(clusterUrl(), "failover");
    const replicas = tempDir();
    const a = startHost("a", url, replicas);
    expect(await open(a.process, "x")).toMatchObject({ ok: true, epoch: 1 });
    await a.process.send({ op: "append", agent: "x", text: "a0", durable: true });
    a.process.kill("SIGSTOP");
    const stoppedAt = Date.now();

    const b = startHost("b", url, replicas);
    const won = await takeOver(b.process, "x", stoppedAt);
    expect(won.epoch).toBe(2);
    expect(
      await b.process.send({ op: "append", agent: "x", text: "b0", durable: true }),
    ).toMatchObject({ ok: true });

    a.process.kill("SIGCONT");
    const late = await a.process.send({ op: "append", agent: "x", text: "a-late" });
    expect(late).toMatchObject({ ok: false, code: "E_LEASE_LOST" });
    const fenced = await a.process.send({ op: "enqueue", agent: "x", id: "from-a" });
    expect(fenced).toMatchObject({ ok: false, code: "E_LEASE_LOST" });
    expect(await b.process.send({ op: "enqueue", agent: "x", id: "from-b" })).toMatchObject({
      ok: true,
    });
    expect(
      await b.process.send({ op: "append", agent: "x", text: "b1", durable: true }),
    ).toMatchObject({ ok: true });

    const queued = await withClient(url, (c) =>
      c.query("SELECT id FROM delivery_queue_entries ORDER BY id"),
    );
    expect(queued.rows).toEqual([{ id: "from-b" }]);
    // What b's epoch holds off-host, restored by Litestream itself.
    const restored = join(tempDir(), "restored.sqlite");
    execFileSync(
      litestreamBinary(),
      ["restore", "-o", restored, pathToFileURL(join(replicas, "x", "e2")).href],
      { stdio: "ignore", timeout: 30_000 },
    );
    expect(notesIn(restored)).toEqual(["a0", "b0", "b1"]);
    expect(notesIn(join(a.home, agentDbRelativePath("x")))).toEqual(["a0"]);
  }, 90_000);

  it("a host restarted under its name within its lease, its disk lost, gets its agent back from its own epoch's replica; leases it no longer serves are given up", async () => {
    const url = await freshDatabase(clusterUrl(), "failover");
    const replicas = tempDir();
    const first = startHost("a", url, replicas);
    for (const agent of ["x", "y"])
      expect(await open(first.process, agent)).toMatchObject({ ok: true, epoch: 1 });
    await first.process.send({ op: "append", agent: "x", text: "before", durable: true });
    first.process.kill("SIGKILL");
    for (const pid of sidecars) killQuietly(pid, "SIGKILL");

    const again = startHost("a", url, replicas); // A fresh disk: x's file is gone.
    const reopened = await open(again.process, "x");
    expect(reopened).toMatchObject({ ok: true, epoch: 1 }); // Its own live lease, renewed.
    expect(notesIn(join(again.home, agentDbRelativePath("x")))).toEqual(["before"]);
    const owners = () =>
      withClient(
        url,
        async (c) =>
          (await c.query("SELECT agent_id, owner_host FROM agent_leases ORDER BY agent_id")).rows,
      );
    await waitForAsync(
      async () => (await owners()).some((r) => r.agent_id === "y" && r.owner_host === null),
      5_000,
    );
    expect(await owners()).toEqual([
      { agent_id: "x", owner_host: "a" },
      { agent_id: "y", owner_host: null },
    ]);
  }, 60_000);
});

describe("a host's Litestream follows the host", () => {
  it("a host killed with -9 takes its Litestream with it within seconds, after a final sync of the commits in its WAL", async () => {
    const url = await freshDatabase(clusterUrl(), "failover");
    const replicas = tempDir();
    // A sync interval far past the test: after Litestream's first sync at start, only the final
    // sync it makes on SIGTERM can ship a commit.
    const a = new HostProcess({
      home: tempDir(),
      host: "a",
      controlPlane: url,
      replicas,
      leaseMs: LEASE_MS,
      syncMs: 600_000,
    });
    hosts.push(a);
    const opened = await open(a, "x");
    expect(opened).toMatchObject({ ok: true, epoch: 1 });
    const litestream = opened.litestreamPid as number;
    const argv = () => readFileSync(`/proc/${litestream}/cmdline`, "utf8").split("\0");
    await waitFor(() => argv().includes("replicate"), 5_000); // Once the supervisor's fork execs it.
    await new Promise((r) => setTimeout(r, 1_500)); // Litestream's first sync, at its start.
    expect(notesIn(restoreReplica(join(replicas, "x", "e1")))).toEqual([]);
    for (const text of ["w0", "w1", "w2"]) {
      expect(await a.send({ op: "append", agent: "x", text })).toMatchObject({ ok: true });
    }

    a.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor(() => !alive(litestream), 10_000);
    console.log(`litestream exited ${Date.now() - killedAt} ms after its host's kill -9`);
    expect(notesIn(restoreReplica(join(replicas, "x", "e1")))).toEqual(["w0", "w1", "w2"]);
  }, 60_000);
});

/** What a replica holds, restored by Litestream itself into a fresh file. */
function restoreReplica(replica: string): string {
  const restored = join(tempDir(), "restored.sqlite");
  execFileSync(litestreamBinary(), ["restore", "-o", restored, pathToFileURL(replica).href], {
    stdio: "ignore",
    timeout: 30_000,
  });
  return restored;
}

/** Whether the process runs: a zombie (exited, not yet reaped) does not. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function waitForAsync(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}
