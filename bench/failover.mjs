// Failover of a large agent: two cluster hosts (examples/cluster-host.mjs, each an OS process with
// a home of its own) share a throwaway PostgreSQL control plane and a replica directory. Host A
// grows one agent's database to SIZE_MB of messages (search-indexed as usual) and waits for its
// Litestream replica to hold it all; then A and its Litestream are killed with -9, as a lost
// machine would be. Host B, already running, keeps trying to win the agent; the figure is the time
// from the kill to B's first accepted append, against the lease plus 5 s. B must hold every
// event A had made durable.
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { startCluster } from "../scripts/postgres-cluster.mjs";
import { fmtBytes, progress, QUICK, runIfMain, table, withTempDir } from "./lib.mjs";

const SIZE_MB = Number(process.env.BENCH_FAILOVER_MB ?? (QUICK ? 20 : 200));
const LEASE_MS = 5_000;
const SYNC_MS = 1_000;
const TARGET_MS = LEASE_MS + 5_000;
const EXAMPLE = fileURLToPath(new URL("../examples/cluster-host.mjs", import.meta.url));

/** One host process: JSON commands in, one answer line each out. */
class Host {
  constructor({ home, host, controlPlane, replicas }) {
    this.child = spawn(
      process.execPath,
      [
        EXAMPLE,
        ...["--home", home, "--host", host, "--control-plane", controlPlane],
        ...["--replicas", replicas, "--lease-ms", String(LEASE_MS), "--sync-ms", String(SYNC_MS)],
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    this.waiting = [];
    this.ready = new Promise((resolve, reject) => {
      this.child.once("exit", (code, signal) =>
        reject(new Error(`host ${host} exited: ${code ?? signal}`)),
      );
      createInterface({ input: this.child.stdout }).on("line", (text) => {
        const line = JSON.parse(text);
        if (line.ready) resolve();
        else if ("ok" in line) this.waiting.shift()?.(line);
      });
    });
  }

  async send(command) {
    await this.ready;
    const answer = new Promise((resolve) => this.waiting.push(resolve));
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
    return answer;
  }

  kill() {
    try {
      this.child.kill("SIGKILL");
    } catch {
      // Gone already.
    }
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function ok(answer, what) {
  if (!answer.ok) throw new Error(`${what}: ${answer.code} ${answer.message}`);
  return answer;
}

function duBytes(path) {
  const out = spawnSync("du", ["-sb", path], { encoding: "utf8" }).stdout;
  return Number(out.split("\t")[0]);
}

async function measure(dir, controlPlane) {
  const replicas = join(dir, "replicas");
  const hostA = new Host({ home: join(dir, "a"), host: "a", controlPlane, replicas });
  const hosts = [hostA];
  try {
    const opened = ok(await hostA.send({ op: "open", agent: "big" }), "A opens");
    progress(`failover: host A fills its agent to ${SIZE_MB} MB`);
    const fillStarted = Date.now();
    const fill = ok(await hostA.send({ op: "fill", agent: "big", mb: SIZE_MB }), "A fills");
    const fillMs = Date.now() - fillStarted;
    const before = ok(await hostA.send({ op: "count", agent: "big" }), "A counts").events;
    const hostB = new Host({ home: join(dir, "b"), host: "b", controlPlane, replicas });
    hosts.push(hostB);
    await hostB.ready;
    progress("failover: host A and its Litestream killed with -9; host B takes over");
    hostA.kill();
    process.kill(opened.litestreamPid, "SIGKILL");
    const killedAt = Date.now();
    let tries = 0;
    for (;;) {
      tries++;
      const answer = await hostB.send({ op: "open", agent: "big" });
      if (answer.ok) break;
      if (answer.code !== "E_NOT_OWNER")
        throw new Error(`B opens: ${answer.code} ${answer.message}`);
      if (Date.now() - killedAt > 120_000) throw new Error("B did not win the agent in 120 s");
      await sleep(100);
    }
    const ownedMs = Date.now() - killedAt;
    ok(await hostB.send({ op: "append", agent: "big", text: "after the failover" }), "B appends");
    const writableMs = Date.now() - killedAt;
    const after = ok(await hostB.send({ op: "count", agent: "big" }), "B counts").events;
    return {
      ...fill,
      fillMs,
      before,
      // B's append started a session of its own: its header and the note.
      restored: after - 2,
      ownedMs,
      writableMs,
      tries,
      replicaBytes: duBytes(replicas),
    };
  } finally {
    for (const host of hosts) host.kill();
  }
}

export async function run() {
  const cluster = await startCluster();
  try {
    const result = await withTempDir("failover", (dir) => measure(dir, cluster.url));
    const writableMet = result.writableMs <= TARGET_MS;
    const nothingLost = result.restored === result.before;
    const markdown = [
      `## Failover of a ${SIZE_MB} MB agent`,
      "",
      "Two cluster hosts (`examples/cluster-host.mjs`, separate processes with homes of their own) share",
      `a throwaway PostgreSQL and a replica directory; lease ${LEASE_MS / 1000} s, Litestream sync interval`,
      `${SYNC_MS / 1000} s. Host A grows one agent to ${SIZE_MB} MB of user messages (indexed for search), waits`,
      "for `durable()`, and is killed with -9 together with its Litestream (a lost machine). Host B,",
      "already running, retries `openAgent` every 100 ms; it wins the lease once A's lapses, restores",
      "the database from A's replica and appends.",
      "",
      table(
        ["measure", "value"],
        [
          [
            "agent database",
            `${fmtBytes(result.bytes)} (${result.events.toLocaleString("en-US")} events)`,
          ],
          ["replica directory", fmtBytes(result.replicaBytes)],
          ["host A: fill (appends and indexing)", `${(result.fillMs / 1000).toFixed(1)} s`],
          ["host A: `durable()` after the fill", `${(result.durableMs / 1000).toFixed(1)} s`],
          [
            "kill → B owns the agent (lease lapsed, restored)",
            `${(result.ownedMs / 1000).toFixed(2)} s`,
          ],
          ["kill → B's first append accepted", `${(result.writableMs / 1000).toFixed(2)} s`],
          ["events A made durable / found on B", `${result.before} / ${result.restored}`],
        ],
      ),
      "",
    ].join("\n");
    return {
      name: "failover",
      markdown,
      targets: [
        {
          name: `failover of a ${SIZE_MB} MB agent: writes accepted on another host ≤ lease + 5 s (${TARGET_MS / 1000} s) after a kill -9`,
          value: `${(result.writableMs / 1000).toFixed(2)} s`,
          met: writableMet,
        },
        {
          name: "failover: every event made durable is on the new owner",
          value: `${result.restored} of ${result.before}`,
          met: nothingLost,
        },
      ],
    };
  } finally {
    cluster.stop();
  }
}

await runIfMain(import.meta.url, run);
