import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { requireBuild } from "../support/built.js";

const run = promisify(execFile);
const WRITER = new URL("../fixtures/kv-writer.mjs", import.meta.url);
const PER_WRITER = 1000;
const startAt = () => Date.now() + 800;

interface WriterResult {
  writer: string;
  errors: string[];
  written: number;
}

function inThread(home: string, writer: string, start: number): Promise<WriterResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WRITER, {
      workerData: { home, writer, count: PER_WRITER, startAt: start },
    });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

async function inProcess(home: string, writer: string, start: number): Promise<WriterResult> {
  const { stdout } = await run(process.execPath, [
    WRITER.pathname,
    home,
    writer,
    String(PER_WRITER),
    String(start),
  ]);
  return JSON.parse(stdout) as WriterResult;
}

describe("concurrent KV writers: 2 OS processes and 2 worker threads on one home", () => {
  let home: string;
  beforeAll(() => {
    requireBuild();
    home = mkdtempSync(join(tmpdir(), "agentstate-concurrency-"));
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("loses no write and lets no SQLITE_BUSY reach the caller", async () => {
    const start = startAt();
    const results = await Promise.all([
      inProcess(home, "p1", start),
      inProcess(home, "p2", start),
      inThread(home, "t1", start),
      inThread(home, "t2", start),
    ]);
    for (const result of results) {
      expect(result.errors, result.writer).toEqual([]);
      expect(result.written).toBe(PER_WRITER);
    }
    const state = openStateHome({ home, create: false });
    const keys = state.kv
      .list("shared", { limit: 10_000 })
      .map((e) => e.key)
      .filter((k) => k !== "counter");
    expect(keys).toHaveLength(4 * PER_WRITER);
    expect(new Set(keys).size).toBe(4 * PER_WRITER);
    expect(state.kv.get("shared", "counter")).toBe(4 * PER_WRITER);
    expect(state.agent("main", { create: false }).kv.get("shared", "counter")).toBe(4 * PER_WRITER);
    expect(state.listAgents().map((a) => a.agentId)).toEqual(["main"]);
    state.close();
  });
});
