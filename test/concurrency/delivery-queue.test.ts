import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/database.js";
import { DeliveryQueueStore } from "../../src/stores/global/delivery-queue-store.js";
import { requireBuild } from "../support/built.js";

const CLAIMER = fileURLToPath(new URL("../fixtures/queue-claimer.mjs", import.meta.url));
const QUEUE = "outbound-delivery";

interface DrainResult {
  owner: string;
  claimed: string[];
  delivered: string[];
  errors: string[];
}

interface Held {
  acked: string[];
  held: { id: string; leaseExpiresAt: number }[];
}

function drainInThread(args: {
  path: string;
  queue: string;
  owner: string;
  leaseMs: number;
  ready: SharedArrayBuffer;
  parties: number;
}) {
  return new Promise<DrainResult>((resolve, reject) => {
    const worker = new Worker(CLAIMER, { workerData: args });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

function enqueueMany(db: Database, queue: string, count: number): void {
  const store = new DeliveryQueueStore(db);
  db.tx(() => {
    for (let i = 0; i < count; i++) {
      store.enqueue(queue, {
        id: `e${String(i).padStart(5, "0")}`,
        payload: { text: `message ${i}` },
      });
    }
  });
}

/** Starts a claimer process that acks some entries, holds leases on others, and reports them. */
function startHolder(path: string, leaseMs: number, ack: number, hold: number) {
  const child = spawn(
    process.execPath,
    [CLAIMER, path, QUEUE, "doomed", String(leaseMs), String(ack), String(hold)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const report = new Promise<Held>((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", (line) =>
      resolve(JSON.parse(line) as Held),
    );
    child.once("exit", (code, signal) =>
      reject(new Error(`claimer exited early (${code ?? signal})`)),
    );
  });
  return { child, report };
}

const ENTRIES = 40_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("delivery queue under concurrent claimers", () => {
  let dir: string;
  beforeAll(() => {
    requireBuild();
    dir = mkdtempSync(join(tmpdir(), "agentstate-queue-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("4 worker threads deliver each of 40,000 entries exactly once", async () => {
    const path = join(dir, "threads.sqlite");
    const db = openDatabase({ path, role: "global" });
    // Enough entries that a claimer SQLite's busy handler keeps asleep (its waits grow to 100 ms
    // while the others take the lock) still wakes to a share: with 10,000, one in a few runs
    // under a busy machine delivered none.
    enqueueMany(db, QUEUE, ENTRIES);
    // The claimers wait for each other at a barrier, then race.
    const ready = new SharedArrayBuffer(4);
    const results = await Promise.all(
      ["t1", "t2", "t3", "t4"].map((owner) =>
        drainInThread({ path, queue: QUEUE, owner, leaseMs: 60_000, ready, parties: 4 }),
      ),
    );
    for (const result of results) expect(result.errors, result.owner).toEqual([]);
    // No entry was handed to two claimers, and every claim ended in a successful ack.
    const claimed = results.flatMap((r) => r.claimed);
    expect(claimed).toHaveLength(ENTRIES);
    expect(new Set(claimed).size).toBe(ENTRIES);
    const delivered = results.flatMap((r) => r.delivered);
    expect(delivered).toHaveLength(ENTRIES);
    expect(new Set(delivered).size).toBe(ENTRIES);
    // The claimers really competed: every one of them delivered a share.
    for (const result of results) expect(result.delivered.length, result.owner).toBeGreaterThan(0);
    expect(new DeliveryQueueStore(db).counts(QUEUE)).toEqual({ pending: 0, leased: 0, failed: 0 });
    db.close();
  });

  it("redelivers the entries of a killed claimer once its leases lapse, and no others", async () => {
    const path = join(dir, "killed.sqlite");
    const db = openDatabase({ path, role: "global" });
    enqueueMany(db, QUEUE, 200);
    const leaseMs = 1500;
    const { child, report } = startHolder(path, leaseMs, 5, 20);
    const { acked, held } = await report;
    expect(child.pid).toBeDefined();
    process.kill(child.pid as number, "SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));

    const store = new DeliveryQueueStore(db, { leaseMs: 60_000 });
    const deliveredAt = new Map<string, number>();
    const deadline = Date.now() + 20_000;
    while (deliveredAt.size < 200 - acked.length && Date.now() < deadline) {
      const entry = store.claim(QUEUE, "survivor");
      if (!entry) {
        await sleep(50);
        continue;
      }
      expect(deliveredAt.has(entry.id), entry.id).toBe(false);
      store.ack(QUEUE, entry.id, entry.leaseId);
      deliveredAt.set(entry.id, entry.lastAttemptAt as number);
    }
    expect(deliveredAt.size).toBe(200 - acked.length);
    for (const id of acked) expect(deliveredAt.has(id), id).toBe(false);
    for (const { id, leaseExpiresAt } of held) {
      // Redelivered, and not before the dead claimer's lease ran out.
      expect(deliveredAt.get(id), id).toBeGreaterThanOrEqual(leaseExpiresAt);
    }
    expect(store.counts(QUEUE)).toEqual({ pending: 0, leased: 0, failed: 0 });
    db.close();
  });
});
