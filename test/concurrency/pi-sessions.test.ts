import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AgentState, openStateHome } from "../../src/home.js";
import { AgentStateSessionManager } from "../../src/pi/agentstate-session-manager.js";
import { requireBuild } from "../support/built.js";

const run = promisify(execFile);
const APPENDER = new URL("../fixtures/pi-appender.mjs", import.meta.url).pathname;

interface Output {
  session: string;
  acks: string[];
  conflicts: number;
}

function parse(stdout: string): Output {
  const lines = stdout.split("\n");
  return {
    session: lines.find((l) => l.startsWith("session "))?.slice(8) ?? "",
    acks: lines.filter((l) => l.startsWith("ack ")).map((l) => l.slice(4)),
    conflicts: Number(lines.find((l) => l.startsWith("conflicts "))?.slice(10) ?? Number.NaN),
  };
}

async function appender(args: Record<string, unknown>): Promise<Output> {
  const { stdout } = await run(process.execPath, [APPENDER, JSON.stringify(args)], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return parse(stdout);
}

/** The stored session as a chain check: every entry's parent is the entry stored just before. */
function chain(agent: AgentState, sessionId: string): string[] {
  const entries = AgentStateSessionManager.open(agent, sessionId).getEntries();
  entries.forEach((entry, i) => {
    expect(entry.parentId, `entry ${i}`).toBe(i === 0 ? null : entries[i - 1]?.id);
  });
  return entries.map((e) => e.id);
}

let home: string;
beforeAll(requireBuild);
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe("AgentStateSessionManager across processes", () => {
  it("two processes on two sessions of one agent write side by side", async () => {
    home = mkdtempSync(join(tmpdir(), "agentstate-pi-"));
    const startAt = Date.now() + 1500;
    const [a, b] = await Promise.all(
      ["a", "b"].map((writer) => appender({ home, writer, mode: "own", count: 200, startAt })),
    );
    const agent = openStateHome({ home }).agent("main");
    for (const out of [a, b] as Output[]) {
      expect(out.acks).toHaveLength(200);
      expect(chain(agent, out.session)).toEqual(out.acks);
    }
    const listed = await AgentStateSessionManager.listAll(agent);
    expect(listed.map((s) => s.cwd).sort()).toEqual(["/work/a", "/work/b"]);
  });

  it("two processes on one session: a stale append fails with E_CONFLICT, the retry follows the tail", async () => {
    home = mkdtempSync(join(tmpdir(), "agentstate-pi-"));
    const agent = openStateHome({ home }).agent("main");
    const first = AgentStateSessionManager.create(agent, "/work");
    const root = first.appendMessage({ role: "user", content: "start", timestamp: 1 });
    const sessionId = first.getSessionId();
    const startAt = Date.now() + 1500;
    const outs = await Promise.all(
      ["a", "b"].map((writer) =>
        appender({ home, writer, mode: "shared", sessionId, count: 150, startAt }),
      ),
    );
    const ids = chain(agent, sessionId);
    const acked = outs.flatMap((o) => o.acks);
    expect(acked).toHaveLength(300);
    expect(ids).toHaveLength(301);
    expect(new Set(ids)).toEqual(new Set([root, ...acked]));
  });

  it("kill -9 in the middle of its appends: every acknowledged entry is there once, the tree intact", async () => {
    home = mkdtempSync(join(tmpdir(), "agentstate-pi-"));
    // Far more appends than the kill waits for: at 30 µs an append, a child asked for 1,000 could
    // finish the last few hundred before a parent on a busy machine read the ack it kills at.
    const count = 20_000;
    const child = spawn(process.execPath, [
      APPENDER,
      JSON.stringify({ home, writer: "k", mode: "own", count }),
    ]);
    let stdout = "";
    const killAt = 200 + Math.floor(Math.random() * 600);
    await new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.split("\nack ").length > killAt) child.kill("SIGKILL");
      });
      // "close", not "exit": every ack the child wrote before the kill is read from the pipe first.
      child.on("close", () => resolve());
    });
    const out = parse(stdout);
    expect(out.acks.length).toBeGreaterThanOrEqual(killAt);
    expect(out.acks.length).toBeLessThan(count);
    const agent = openStateHome({ home }).agent("main");
    const ids = chain(agent, out.session);
    // At most one append committed without its acknowledgement reaching the pipe.
    expect(ids.slice(0, out.acks.length)).toEqual(out.acks);
    expect(ids.length - out.acks.length).toBeLessThanOrEqual(1);
    const reopened = AgentStateSessionManager.open(agent, out.session);
    reopened.appendMessage({ role: "user", content: "after the crash", timestamp: 1 });
    expect(chain(agent, out.session)).toHaveLength(ids.length + 1);
  });
});
