import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { createAgentStores } from "../../src/stores/agent/agent-stores.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { countingDriver, type Execution } from "../support/counting-driver.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const FIXTURE = fileURLToPath(new URL("../fixtures/memory-session.mjs", import.meta.url));
const KEY = "agent:main:main";
const EVENTS = 5000;

const TRANSCRIPT_TABLE = /\btranscript_\w+/;
const transcriptRows = (executions: readonly Execution[]) =>
  executions.filter((e) => TRANSCRIPT_TABLE.test(e.sql)).reduce((n, e) => n + e.rows, 0);
/**
 * Statements that read transcript rows beyond a session's last event: the session row keeps no
 * tail, so its event count is read from its last event (one row); anything more is a replay.
 */
const transcriptReplays = (executions: readonly Execution[]) =>
  executions.filter((e) => TRANSCRIPT_TABLE.test(e.sql) && e.rows > 1).map((e) => e.sql);
const rowsRead = (executions: readonly Execution[]) => executions.reduce((n, e) => n + e.rows, 0);

/** The first process: topic A, then topic B, then SIGKILL. */
function interruptedSession(home: string): { sessionId: string; a: string; b: string } {
  const child = spawnSync(process.execPath, [FIXTURE, home, KEY, String(EVENTS)], {
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(child.signal, child.stderr).toBe("SIGKILL");
  return JSON.parse(child.stdout);
}

describe("recovering memory after the process dies", () => {
  it("resumes topic B with its open loops and switches back to A, reading no transcript row", () => {
    const home = tempDir();
    const { sessionId, a, b } = interruptedSession(home);

    // A fresh process: its own connection, through a driver that records every statement.
    const counter = countingDriver();
    const path = join(home, "agents", "main", "agent", "agent.sqlite");
    const db = openDatabase({ path, role: "agent", driver: counter.factory });
    const { memory, lifecycle } = createAgentStores(db, "main");
    counter.reset();

    const recovered = memory.recover(KEY);
    expect(recovered?.session.sessionId).toBe(sessionId);
    expect(recovered?.session.eventCount).toBe(EVENTS + 1);
    expect(recovered?.state?.lastTurnId).toEqual(expect.any(String));
    expect(recovered?.topic).toMatchObject({
      topicId: b,
      status: "open",
      summaryShort: "Reconciling March invoices against the bank export",
      openLoops: ["ask Dana for the missing Acme invoice", "send the summary to accounting"],
    });
    expect(recovered?.topics.map((t) => [t.topicId, t.status])).toEqual([
      [b, "open"],
      [a, "paused"],
    ]);
    expect(recovered?.facts.map((f) => [f.key, f.reference])).toEqual([
      ["deploy.key", "env:DEPLOY_KEY"],
    ]);
    expect(recovered?.text).toContain("- ask Dana for the missing Acme invoice");
    expect(transcriptReplays(counter.executions)).toEqual([]);
    expect(rowsRead(counter.executions)).toBeLessThan(20);

    counter.reset();
    const back = memory.switchTopic(sessionId, a);
    expect(back.previous).toMatchObject({ topicId: b, status: "paused" });
    const onA = memory.recall({ sessionId });
    expect(onA.topic).toMatchObject({
      topicId: a,
      summaryShort: "Moving CI to the self-hosted runner; runner picked, secrets not wired yet",
      openLoops: ["wire DEPLOY_KEY into the runner", "test a rollback"],
    });
    expect(onA.facts.map((f) => [f.key, f.reason])).toEqual([
      ["deploy.key", "always"],
      ["deploy.runner", "topic"],
    ]);
    expect(onA.text).toContain("## Topic: Deploy pipeline (open)");
    expect(transcriptReplays(counter.executions)).toEqual([]);
    expect(rowsRead(counter.executions)).toBeLessThan(20);
    expect(memory.topics.members(a)).toHaveLength(20);

    // The counter does see transcript reads: replaying the session reads every event.
    counter.reset();
    expect(lifecycle.restore(KEY)?.context.length).toBeGreaterThan(EVENTS / 2);
    expect(transcriptRows(counter.executions)).toBeGreaterThanOrEqual(EVENTS);
    db.close();
  });
});
