import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, withClient } from "../../src/control-plane/test-support/control-planes.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const LEASE_MS = 2_000;
const clusterUrl = usePostgres();
const tempDir = useTempDirs();
const running: ChildProcess[] = [];
beforeAll(() => requireBuild());
afterEach(() => {
  for (const child of running.splice(0)) {
    for (const pid of descendantsOf(child.pid as number)) killQuietly(pid);
    killQuietly(child.pid as number);
  }
});

function killQuietly(pid: number, signal: NodeJS.Signals = "SIGKILL") {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone already.
  }
}

/**
 * The processes below `pid`, read from `ps`, not from the host: its Litestream supervisor and the
 * Litestream that one runs. Killing the supervisor alone would leave Litestream running.
 */
function descendantsOf(pid: number): number[] {
  let children: number[];
  try {
    const out = execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" });
    children = out.split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return children.flatMap((child) => [child, ...descendantsOf(child)]);
}

function homeWith(cluster: Record<string, unknown>): string {
  const home = tempDir();
  writeFileSync(join(home, "agentstate.json"), JSON.stringify({ cluster }));
  return home;
}

interface Host {
  child: ChildProcess;
  url: URL;
  exited: Promise<number | null>;
}

/** `agentstate serve --write --port 0` on `home`, once it prints the URL it listens on. */
function serve(home: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Host> {
  const child = spawn(
    process.execPath,
    [CLI, "serve", "--home", home, "--write", "--port", "0", ...args],
    {
      env: {
        ...process.env,
        AGENTSTATE_HOME: "",
        AGENTSTATE_CONTROL_PLANE: "",
        AGENTSTATE_HOST: "",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  running.push(child);
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /(http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve({ child, url: new URL(match[1]), exited });
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

interface Answer {
  status: number;
  body: {
    error?: { code: string; message: string; details: Record<string, unknown> };
    events?: { event: { type: string; text?: string } }[];
  } & Record<string, unknown>;
}

async function call(host: Host, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(new URL(path, host.url), {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Answer["body"] };
}

const append = (host: Host, text: string) =>
  call(host, "POST", "/api/agents/x/transcripts/s1/events", { event: { type: "note", text } });

function notes(body: Answer["body"]): string[] {
  return (body.events ?? [])
    .filter((e) => e.event.type === "note")
    .map((e) => String(e.event.text));
}

describe("agentstate serve as a cluster host (PostgreSQL, Litestream, real processes)", () => {
  it("serves an agent from one host at a time, and another host takes it over after kill -9", async () => {
    const url = await freshDatabase(clusterUrl(), "serve");
    const replicas = tempDir();
    const timing = { leaseMs: LEASE_MS, syncIntervalMs: 1_000 };
    // a: the control plane from the environment, its name in the file; b: the other way round.
    const a = await serve(homeWith({ host: "a", replicas, ...timing }), [], {
      AGENTSTATE_CONTROL_PLANE: url,
    });
    const b = await serve(homeWith({ controlPlane: url, replicas, ...timing }), [
      "--cluster-host",
      "b",
    ]);

    for (let i = 0; i < 5; i++) expect((await append(a, `n${i}`)).status).toBe(201);
    const durable = await call(a, "POST", "/api/agents/x/durable");
    expect(durable).toEqual({ status: 200, body: { agentId: "x", host: "a", epoch: 1 } });

    const refused = await call(b, "GET", "/api/agents/x/transcripts");
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: "E_NOT_OWNER", details: { owner: "a" } });
    expect(refused.body.error?.message).toContain("held by a");
    expect((await append(b, "from-b")).status).toBe(409);
    // An agent nobody has is not created (nor won) by a read.
    expect((await call(b, "GET", "/api/agents/nobody/transcripts")).status).toBe(404);

    const status = cli(["cluster", "status", "--control-plane", url, "--json"]);
    expect(status.status).toBe(0);
    const leases = JSON.parse(status.stdout).agents as { agentId: string; host: string }[];
    expect(leases.map((l) => [l.agentId, l.host])).toEqual([["x", "a"]]);

    const sidecars = descendantsOf(a.child.pid as number);
    a.child.kill("SIGKILL");
    for (const pid of sidecars) killQuietly(pid);
    const killedAt = Date.now();
    let served = await call(b, "GET", "/api/agents/x/transcripts/s1/events?limit=1000");
    while (served.status === 409 && Date.now() - killedAt < 30_000) {
      await new Promise((r) => setTimeout(r, 100));
      served = await call(b, "GET", "/api/agents/x/transcripts/s1/events?limit=1000");
    }
    const tookMs = Date.now() - killedAt;
    expect(served.status).toBe(200);
    expect(tookMs).toBeLessThan(LEASE_MS + 5_000);
    expect(notes(served.body)).toEqual(["n0", "n1", "n2", "n3", "n4"]);
    expect((await append(b, "b0")).status).toBe(201);
    console.log(`serve failover: b served x ${tookMs} ms after a was killed`);

    b.child.kill("SIGTERM");
    expect(await b.exited).toBe(0);
    const rows = await withClient(url, (c) =>
      c.query("SELECT owner_host, epoch::int AS epoch FROM agent_leases WHERE agent_id = 'x'"),
    );
    expect(rows.rows).toEqual([{ owner_host: null, epoch: 2 }]);
  }, 90_000);

  it("says in --help how a home becomes a cluster host", () => {
    const help = cli(["serve", "--help"]);
    expect(help.status).toBe(0);
    for (const text of [
      "--cluster-host",
      '"cluster"',
      "$AGENTSTATE_CONTROL_PLANE",
      "E_NOT_OWNER",
    ]) {
      expect(help.stdout).toContain(text);
    }
  });

  it("a bad cluster section fails serve with exit 2, naming the file and the key", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ host: "a", controlPlane: "postgres://x/y", replicas: "r", leaseMs: 5 }, "cluster.leaseMs"],
      [{ host: "a", controlPlane: "postgres://x/y", replicas: "r", lease: 5 }, "cluster.lease"],
      [{ host: "a", replicas: "r" }, "cluster.controlPlane"],
      [{ controlPlane: "postgres://x/y", replicas: "r" }, "cluster.host"],
      [{ host: "a", controlPlane: "postgres://x/y", replicas: "s3://b/p" }, "cluster.replicas"],
    ];
    for (const [section, key] of cases) {
      const home = homeWith(section);
      const result = cli(["serve", "--home", home, "--port", "0"], {
        AGENTSTATE_CONTROL_PLANE: "",
        AGENTSTATE_HOST: "",
      });
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr).toContain(join(home, "agentstate.json"));
      expect(result.stderr).toContain(`${key}:`);
    }
    const plain = tempDir();
    const flagOnly = cli(["serve", "--home", plain, "--port", "0", "--cluster-host", "a"]);
    expect(flagOnly.status).toBe(2);
    expect(flagOnly.stderr).toContain("cluster section");
    const maintained = cli(
      ["serve", "--home", homeWith({ host: "a", replicas: "r" }), "--maintain-every", "1h"],
      { AGENTSTATE_CONTROL_PLANE: "postgres://x/y" },
    );
    expect(maintained.status).toBe(2);
    expect(maintained.stderr).toContain("--maintain-every is not available on a cluster host");
  });
});
