import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Worker } from "node:worker_threads";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { requireBuild } from "../support/built.js";

const run = promisify(execFile);
const APPENDER = new URL("../fixtures/transcript-appender.mjs", import.meta.url);

interface AppenderArgs {
  home: string;
  writer: string;
  sessionId: string;
  count: number;
  startAt: number;
  idempotencyKey?: string;
}

interface AppenderResult {
  writer: string;
  errors: string[];
  appended: Array<{ seq: number; id: string; deduplicated: boolean }>;
}

async function inProcess(args: AppenderArgs): Promise<AppenderResult> {
  const { stdout } = await run(process.execPath, [APPENDER.pathname, JSON.stringify(args)], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as AppenderResult;
}

function inThread(args: AppenderArgs): Promise<AppenderResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(APPENDER, { workerData: args });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

let home: string;
beforeAll(requireBuild);
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe("concurrent transcript appends", () => {
  it("4 OS processes appending to one session: seq contiguous, nothing lost or duplicated", async () => {
    home = mkdtempSync(join(tmpdir(), "agentstate-appenders-"));
    const startAt = Date.now() + 1000;
    const count = 300;
    const writers = ["p1", "p2", "p3", "p4"];
    const results = await Promise.all(
      writers.map((writer) => inProcess({ home, writer, sessionId: "shared", count, startAt })),
    );
    for (const result of results) {
      expect(result.errors, result.writer).toEqual([]);
      expect(result.appended).toHaveLength(count);
    }
    const state = openStateHome({ home, create: false });
    const events = state.transcripts.read(
      { agentId: "main", sessionId: "shared" },
      { limit: 10_000 },
    );
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events).toHaveLength(1 + writers.length * count);
    const texts = new Set(
      events
        .slice(1)
        .map((e) => (e.event.message as { content: Array<{ text: string }> }).content[0]?.text),
    );
    for (const writer of writers) {
      for (let i = 0; i < count; i++) expect(texts.has(`${writer} says ${i}`)).toBe(true);
    }
    const ids = events.map((e) => e.event.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Every event's parent is the event appended just before it: one linear chain.
    for (let i = 2; i < events.length; i++) {
      expect(events[i]?.event.parentId).toBe(events[i - 1]?.event.id);
    }
    expect(state.agent("main").db.integrityCheck()).toEqual(["ok"]);
    state.close();
  });

  it("a retry storm with one idempotency key stores exactly one event", async () => {
    home = mkdtempSync(join(tmpdir(), "agentstate-retry-"));
    const startAt = Date.now() + 1000;
    const common = { home, sessionId: "s", count: 200, startAt, idempotencyKey: "turn-42" };
    const results = await Promise.all([
      inProcess({ ...common, writer: "p1" }),
      inProcess({ ...common, writer: "p2" }),
      inThread({ ...common, writer: "t1" }),
      inThread({ ...common, writer: "t2" }),
    ]);
    const returned = new Set<string>();
    let fresh = 0;
    for (const result of results) {
      expect(result.errors, result.writer).toEqual([]);
      for (const appended of result.appended) {
        returned.add(`${appended.seq}:${appended.id}`);
        if (!appended.deduplicated) fresh++;
      }
    }
    expect(fresh).toBe(1);
    expect(returned.size).toBe(1);
    const state = openStateHome({ home, create: false });
    expect(
      state.transcripts.read({ agentId: "main", sessionId: "s" }).map((e) => e.event.type),
    ).toEqual(["session", "message"]);
    state.close();
  });
});
