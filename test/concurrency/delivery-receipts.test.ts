import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { DeliveryQueueStore } from "../../src/stores/global/delivery-queue-store.js";
import { requireBuild } from "../support/built.js";

const SENDER = fileURLToPath(new URL("../fixtures/receipt-sender.mjs", import.meta.url));
const RESOLVER = fileURLToPath(new URL("../fixtures/conversation-resolver.mjs", import.meta.url));
const QUEUE = "outbound-delivery";

/** Runs a fixture and resolves with its first stdout line, parsed, and the child. */
function startChild<T>(script: string, args: string[]) {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = new Promise<T>((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", (text) => resolve(JSON.parse(text) as T));
    child.once("exit", (code, signal) =>
      reject(new Error(`child exited early (${code ?? signal})`)),
    );
  });
  return { child, line };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("delivery receipts across processes", () => {
  let dir: string;
  beforeAll(() => {
    requireBuild();
    dir = mkdtempSync(join(tmpdir(), "agentstate-receipts-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("a sender killed between beginSend and settle leaves unknown entries that only resolveUnknown hands out again", async () => {
    const path = join(dir, "killed-sender.sqlite");
    const db = openDatabase({ path, role: "global" });
    const store = new DeliveryQueueStore(db, { leaseMs: 60_000 });
    for (const id of ["m1", "m2", "m3"]) store.enqueue(QUEUE, { id, payload: { text: id } });
    const leaseMs = 800;
    const { child, line } = startChild<{ begun: { id: string; leaseExpiresAt: number }[] }>(
      SENDER,
      [path, QUEUE, String(leaseMs), "2"],
    );
    const { begun } = await line;
    expect(begun.map((b) => b.id)).toEqual(["m1", "m2"]);
    process.kill(child.pid as number, "SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));

    // While the dead sender's leases run, its entries are mid-send: not claimable, not unknown.
    expect(store.claim(QUEUE, "survivor")?.id).toBe("m3");
    expect(store.claim(QUEUE, "survivor")).toBeUndefined();
    const lastLease = Math.max(...begun.map((b) => b.leaseExpiresAt));
    await sleep(Math.max(0, lastLease - Date.now()) + 50);

    const rows = db
      .prepare<{ id: string; status: string; send_started_at: number | null }>(
        "SELECT id, status, send_started_at FROM delivery_queue_entries WHERE id IN ('m1', 'm2') ORDER BY id",
      )
      .all();
    expect(rows.map((r) => r.status)).toEqual(["sending", "sending"]);
    for (const row of rows) expect(row.send_started_at).toBeGreaterThan(0);
    expect(store.listUnknown(QUEUE).map((e) => [e.id, e.status])).toEqual([
      ["m1", "unknown"],
      ["m2", "unknown"],
    ]);
    expect(store.claim(QUEUE, "survivor")).toBeUndefined();
    expect(store.reconcileUnknown(QUEUE).kept).toEqual(["m1", "m2"]);
    expect(store.claim(QUEUE, "survivor")).toBeUndefined();

    store.resolveUnknown(QUEUE, "m1", "resend");
    const again = store.claim(QUEUE, "survivor");
    expect(again?.id).toBe("m1");
    expect(store.claim(QUEUE, "survivor")).toBeUndefined();
    store.settle(QUEUE, "m1", again?.leaseId as string, { platformMessageId: "p1" });
    expect(store.listUnknown(QUEUE).map((e) => e.id)).toEqual(["m2"]);
    db.close();
  });

  it("two processes resolving the same addresses at once get one id per address", async () => {
    const path = join(dir, "conversations.sqlite");
    openDatabase({ path, role: "global" }).close();
    const count = 300;
    const goAt = String(Date.now() + 1500);
    const runs = [1, 2].map(() => startChild<string[]>(RESOLVER, [path, String(count), goAt]));
    const [a, b] = await Promise.all(runs.map((r) => r.line));
    expect(a).toHaveLength(count);
    expect(b).toEqual(a);
    expect(new Set(a).size).toBe(count);
    const db = openDatabase({ path, role: "global" });
    const stored = db.prepare<{ n: number }>("SELECT count(*) AS n FROM conversations").get();
    expect(stored?.n).toBe(count);
    db.close();
  });
});
