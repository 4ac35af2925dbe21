import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { SessionStore } from "../../src/stores/agent/session-store.js";
import { requireBuild } from "../support/built.js";

const run = promisify(execFile);
const PATCHER = fileURLToPath(new URL("../fixtures/session-patcher.mjs", import.meta.url));
const PER_WRITER = 1000;
const KEY = "agent:main:main";
// Far enough ahead that every thread and process is connected and waiting at the barrier.
const startAt = () => Date.now() + 1500;

interface PatcherResult {
  writer: string;
  errors: string[];
  patched: number;
  calls: number;
  lockedAttempts: number;
  startedAt: number;
  finishedAt: number;
}

interface Args {
  path: string;
  key: string;
  writer: string;
  count: number;
  startAt: number;
  maxAttempts?: number;
}

function inThread(args: Args): Promise<PatcherResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(PATCHER, { workerData: args });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

async function inProcess(args: Args): Promise<PatcherResult> {
  const { path, key, writer, count, startAt, maxAttempts } = args;
  const argv = [
    PATCHER,
    path,
    key,
    writer,
    String(count),
    String(startAt),
    String(maxAttempts ?? ""),
  ];
  const { stdout } = await run(process.execPath, argv);
  return JSON.parse(stdout) as PatcherResult;
}

function expectEveryPatchCounted(path: string, results: PatcherResult[]): void {
  for (const result of results) {
    expect(result.errors, result.writer).toEqual([]);
    expect(result.patched, result.writer).toBe(PER_WRITER);
  }
  // The writers really ran at the same time: the last to start began before the first finished.
  const lastStart = Math.max(...results.map((r) => r.startedAt));
  expect(lastStart).toBeLessThan(Math.min(...results.map((r) => r.finishedAt)));
  const total = results.length * PER_WRITER;
  const db = openDatabase({ path, role: "agent", create: false });
  expect(new SessionStore(db).get(KEY)).toMatchObject({
    version: total,
    entry: { counter: total },
  });
  expect(db.prepare("SELECT version, entry_json FROM session_entries").all()).toEqual([
    { version: total, entry_json: JSON.stringify({ counter: total }) },
  ]);
  db.close();
}

describe("concurrent SessionStore.patch on one entry", () => {
  let dir: string;
  beforeAll(() => {
    requireBuild();
    dir = mkdtempSync(join(tmpdir(), "agentstate-session-patch-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("4 worker threads lose no increment and see no error", async () => {
    const path = join(dir, "threads", "agent.sqlite");
    const base = { path, key: KEY, count: PER_WRITER, startAt: startAt() };
    const results = await Promise.all(
      ["t1", "t2", "t3", "t4"].map((writer) => inThread({ ...base, writer })),
    );
    expectEveryPatchCounted(path, results);
  });

  it("2 OS processes and 2 worker threads lose no increment and see no error", async () => {
    const path = join(dir, "mixed", "agent.sqlite");
    const base = { path, key: KEY, count: PER_WRITER, startAt: startAt() };
    const results = await Promise.all([
      inProcess({ ...base, writer: "p1" }),
      inProcess({ ...base, writer: "p2" }),
      inThread({ ...base, writer: "t1" }),
      inThread({ ...base, writer: "t2" }),
    ]);
    expectEveryPatchCounted(path, results);
  });

  it("with maxAttempts 2, lost races finish under the write lock without errors", async () => {
    const path = join(dir, "locked", "agent.sqlite");
    const base = { path, key: KEY, count: PER_WRITER, startAt: startAt(), maxAttempts: 2 };
    const results = await Promise.all([
      inProcess({ ...base, writer: "p1" }),
      inThread({ ...base, writer: "t1" }),
      inThread({ ...base, writer: "t2" }),
      inThread({ ...base, writer: "t3" }),
    ]);
    expectEveryPatchCounted(path, results);
    // Every lost optimistic attempt was followed by exactly one locked attempt that won.
    for (const r of results) expect(r.calls - r.patched, r.writer).toBe(r.lockedAttempts);
  });
});
