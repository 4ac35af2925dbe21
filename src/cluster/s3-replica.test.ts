import { execFile } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { freshDatabase } from "../control-plane/test-support/control-planes.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { agentDbRelativePath } from "../home-paths.js";
import { usePostgres } from "../test-support/postgres.js";
import { useS3Server } from "../test-support/s3-server.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { type ClusterHome, openClusterHome } from "./cluster-home.js";
import { litestreamBinary } from "./litestream-binary.js";
import { S3ReplicaStore } from "./s3-replica-store.js";

const run = promisify(execFile);
const clusterUrl = usePostgres();
const s3 = useS3Server("agents");
const tempDir = useTempDirs();
const opened: ClusterHome[] = [];
afterEach(async () => {
  for (const home of opened.splice(0)) await home.close();
});

/** A host replicating to `s3://agents/<prefix>` on the test's s3rver. */
async function host(name: string, controlPlane: string, prefix: string, syncIntervalMs = 200) {
  const home = await openClusterHome({
    home: tempDir(),
    cluster: {
      controlPlane,
      host: name,
      replicas: `s3://${s3().bucket}/${prefix}`,
      s3: { endpoint: s3().endpoint },
      leaseMs: 1_500,
      syncIntervalMs,
    },
  });
  opened.push(home);
  return home;
}

/**
 * The notes in a restore of `s3://agents/<key>` made by the Litestream binary itself, from a
 * config the test writes: what a host with none of this code would get back from the bucket.
 */
async function notesInBucket(key: string): Promise<string[]> {
  const dir = tempDir();
  const config = join(dir, "restore.yml");
  const replica = { type: "s3", bucket: s3().bucket, path: key, endpoint: s3().endpoint };
  const db = { path: join(dir, "db.sqlite"), replicas: [{ ...replica, "force-path-style": true }] };
  writeFileSync(config, JSON.stringify({ dbs: [db] }));
  const restored = join(dir, "restored.sqlite");
  await run(litestreamBinary(), ["restore", "-config", config, "-o", restored, db.path]);
  return notesIn(restored);
}

function notesIn(path: string): string[] {
  const raw = openRawSqlite(path, { readonly: true });
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

const range = (prefix: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `${prefix}${from + i}`);

describe("cluster homes with replicas in an S3-compatible bucket (s3rver)", () => {
  it("replicates an owned agent to the bucket: after each durable(), a restore from the bucket holds every commit", async () => {
    const url = await freshDatabase(clusterUrl(), "s3");
    const a = await host("a", url, "prod", 1_000);
    const agent = await a.openAgent("x");
    const text = "w".repeat(20_000);
    for (let round = 0; round < 3; round++) {
      for (let i = round * 10; i < round * 10 + 10; i++) {
        agent.transcripts.append("s1", { type: "note", text: `a${i}` });
        agent.transcripts.append("s1", { type: "filler", text });
      }
      await agent.durable();
      expect(await notesInBucket("prod/x/e1")).toEqual(range("a", 0, round * 10 + 10));
    }
    // Litestream's config names the bucket and the epoch's prefix; the keys stay in the env.
    const config = readFileSync(join(a.path, "cluster", "litestream.yml"), "utf8");
    expect(JSON.parse(config).dbs[0].replicas[0]).toMatchObject({
      type: "s3",
      bucket: "agents",
      path: "prod/x/e1",
      endpoint: s3().endpoint,
      "force-path-style": true,
    });
    expect(config).not.toContain(process.env.AWS_SECRET_ACCESS_KEY);
  }, 60_000);

  it("a second host restores the agent from the bucket after the first releases it", async () => {
    const url = await freshDatabase(clusterUrl(), "s3");
    const a = await host("a", url, "handover");
    const b = await host("b", url, "handover");
    const onA = await a.openAgent("x");
    for (let i = 0; i < 5; i++) onA.transcripts.append("s1", { type: "note", text: `a${i}` });
    expect(await onA.release()).toBe(true);

    const onB = await b.openAgent("x");
    expect(onB.lease.epoch).toBe(2);
    expect(notesIn(join(b.path, agentDbRelativePath("x")))).toEqual(range("a", 0, 5));
    onB.transcripts.append("s1", { type: "note", text: "b0" });
    await onB.durable();
    expect(await notesInBucket("handover/x/e2")).toEqual([...range("a", 0, 5), "b0"]);
  }, 60_000);

  it("a second host restores every durable commit after the first loses its Litestream and its lease", async () => {
    const url = await freshDatabase(clusterUrl(), "s3");
    const a = await host("a", url, "killed");
    const b = await host("b", url, "killed");
    const onA = await a.openAgent("x");
    for (let i = 0; i < 8; i++) onA.transcripts.append("s1", { type: "note", text: `a${i}` });
    await onA.durable();
    // A lost machine: its Litestream gone at once (no last sync), its renewals stopped.
    process.kill(a.replicatorPid as number, "SIGKILL");
    await a.controlPlane.close();

    const until = Date.now() + 20_000;
    let onB: Awaited<ReturnType<ClusterHome["openAgent"]>> | undefined;
    while (onB === undefined) {
      onB = await b.openAgent("x").catch((error: { code?: string }) => {
        if (error.code !== "E_NOT_OWNER" || Date.now() > until) throw error;
        return new Promise<undefined>((r) => setTimeout(() => r(undefined), 100));
      });
    }
    expect(onB.lease.epoch).toBe(2);
    expect(notesIn(join(b.path, agentDbRelativePath("x")))).toEqual(range("a", 0, 8));
  }, 60_000);

  it("renewals read the bucket only for an agent written since the replica was seen to hold it", async () => {
    const a = await host("a", await freshDatabase(clusterUrl(), "s3"), "quiet");
    const agent = await a.openAgent("x");
    agent.transcripts.append("s1", { type: "note", text: "one" });
    await agent.durable();
    // Background work commits too (the search index catches up at idle, Litestream adds its own
    // tables at its first sync): wait until the WAL has been still for a second, then for the
    // replica.
    const wal = `${join(a.path, agentDbRelativePath("x"))}-wal`;
    for (let last = "", since = Date.now(); Date.now() - since < 1_000; ) {
      const { size, mtimeMs } = statSync(wal);
      if (`${size}:${mtimeMs}` !== last) [last, since] = [`${size}:${mtimeMs}`, Date.now()];
      await new Promise((r) => setTimeout(r, 100));
    }
    await agent.durable();
    const before = await s3().requests();
    await new Promise((r) => setTimeout(r, 2_000)); // four renewals at a 1.5 s lease
    const quiet = await s3().requests();
    expect(quiet.other - before.other).toBe(0);
    expect(quiet.litestream).toBeGreaterThanOrEqual(before.litestream); // the server counts
    agent.transcripts.append("s1", { type: "note", text: "two" });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await s3().requests()).other).toBeGreaterThan(quiet.other);
  }, 30_000);

  it("reads the bucket over the S3 API: a listing and a missing key; an unknown key is E_IO with S3's code", async () => {
    const target = {
      kind: "s3",
      bucket: s3().bucket,
      prefix: "store",
      endpoint: s3().endpoint,
      region: "us-east-1",
      forcePathStyle: true,
    } as const;
    const store = new S3ReplicaStore(target);
    expect(await store.list("nothing")).toEqual([]);
    expect(await store.read("nothing/here")).toBeUndefined();
    // s3rver checks a SigV4 request's key id, not its signature (it verifies SigV2 only).
    const { AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: secret } = process.env;
    process.env.AWS_ACCESS_KEY_ID = "UNKNOWN";
    try {
      await expect(new S3ReplicaStore(target).list("x")).rejects.toMatchObject({
        code: "E_IO",
        message: expect.stringContaining("HTTP 403 InvalidAccessKeyId"),
      });
      delete process.env.AWS_SECRET_ACCESS_KEY;
      expect(() => new S3ReplicaStore(target)).toThrow(
        expect.objectContaining({ code: "E_INVALID_ARGUMENT" }),
      );
    } finally {
      process.env.AWS_ACCESS_KEY_ID = id;
      process.env.AWS_SECRET_ACCESS_KEY = secret;
    }
  });
});
