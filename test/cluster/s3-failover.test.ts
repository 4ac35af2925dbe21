import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { withClient } from "../../src/control-plane/test-support/control-planes.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { agentDbRelativePath } from "../../src/home-paths.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { useS3Server } from "../../src/test-support/s3-server.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { HostProcess, type Line } from "./host-process.js";

const LEASE_MS = 2_000;
const clusterUrl = usePostgres();
const s3 = useS3Server("failover");
const tempDir = useTempDirs();
const hosts: HostProcess[] = [];
const sidecars: number[] = [];
beforeAll(() => requireBuild());
afterEach(() => {
  for (const host of hosts.splice(0)) host.kill();
  for (const pid of sidecars.splice(0)) killQuietly(pid);
});

function killQuietly(pid: number) {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone already.
  }
}

async function freshDatabase(): Promise<string> {
  const name = `s3_failover_${process.pid}_${Date.now()}`;
  await withClient(clusterUrl(), (c) => c.query(`CREATE DATABASE ${name}`));
  return clusterUrl().replace(/\/postgres$/, `/${name}`);
}

function startHost(host: string, controlPlane: string) {
  const home = tempDir();
  const replicas = `s3://${s3().bucket}/agents`;
  const options = { home, host, controlPlane, replicas, leaseMs: LEASE_MS, syncMs: 1_000 };
  const process_ = new HostProcess({ ...options, s3Endpoint: s3().endpoint });
  hosts.push(process_);
  return { home, process: process_ };
}

async function open(host: HostProcess, agent: string): Promise<Line> {
  const answer = await host.send({ op: "open", agent });
  if (answer.ok && typeof answer.litestreamPid === "number") sidecars.push(answer.litestreamPid);
  return answer;
}

function notesIn(path: string): number[] {
  const raw = openRawSqlite(path, { readonly: true });
  try {
    return raw
      .prepare("SELECT event_json FROM transcript_events ORDER BY seq")
      .all()
      .map(
        (r) =>
          JSON.parse((r as { event_json: string }).event_json) as { type: string; text: string },
      )
      .filter((e) => e.type === "note" && e.text.startsWith("e"))
      .map((e) => Number(e.text.slice(1)));
  } finally {
    raw.close();
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("failover through an S3-compatible bucket (host processes, kill -9)", () => {
  it("a host killed with -9 with its Litestream loses no durable event: the next owner restores it from the bucket", async () => {
    const url = await freshDatabase();
    const a = startHost("a", url);
    const opened = await open(a.process, "x");
    expect(opened).toMatchObject({ ok: true, epoch: 1 });
    await a.process.start({ op: "stream", agent: "x", every: 25 });
    await until(() => a.process.events.filter((e) => "durable" in e).length >= 5, 30_000);
    // A lost machine: the host and its Litestream at once, no last sync.
    a.process.kill("SIGKILL");
    killQuietly(opened.litestreamPid as number);
    const durable = Math.max(
      ...a.process.events.filter((e) => "durable" in e).map((e) => e.durable as number),
    );

    const b = startHost("b", url);
    const deadline = Date.now() + 30_000;
    let won = await open(b.process, "x");
    while (!won.ok && Date.now() < deadline) {
      expect(won.code).toBe("E_NOT_OWNER");
      await new Promise((r) => setTimeout(r, 100));
      won = await open(b.process, "x");
    }
    expect(won).toMatchObject({ ok: true, epoch: 2 });
    const survived = notesIn(join(b.home, agentDbRelativePath("x")));
    // A prefix of the stream, holding every event that passed durable().
    expect(survived).toEqual(Array.from({ length: survived.length }, (_, i) => i));
    expect(survived.length).toBeGreaterThan(durable);
  }, 90_000);
});
