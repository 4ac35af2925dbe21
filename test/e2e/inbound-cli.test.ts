import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

// `inputs` and `deliveries` against work left behind by gateway processes killed with SIGKILL:
// what they show is what the gateway's recover / reconcile would find, and they write nothing.

const tempDir = useTempDirs();
beforeAll(requireBuild);

const KEY = "agent:main:main";
const QUEUE = "outbound-delivery";
const CLAIMER = fileURLToPath(new URL("../fixtures/input-claimer.mjs", import.meta.url));
const SENDER = fileURLToPath(new URL("../fixtures/receipt-sender.mjs", import.meta.url));

/** Runs a fixture until its first JSON line, then kills it with SIGKILL, as a crash would. */
async function runAndKill<T>(script: string, args: string[]): Promise<T> {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
  child.kill("SIGKILL");
  if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
  return JSON.parse(line) as T;
}

const sleepUntil = (at: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()) + 50));

interface Seeded {
  home: string;
  heldIds: string[];
  doomedId: string;
  researchInput: string;
}

/** A sent reply, a send cut off by a crash, a turn cut off by a crash, and another agent. */
async function seed(): Promise<Seeded> {
  const home = tempDir();
  const state = openStateHome({ home });
  state.sessions.start("main", KEY);
  const researchInput = state.inputs.accept("research", "agent:research:main", {
    idempotencyKey: "r1",
    payload: { text: "look it up" },
  }).input.inputId;
  state.queue.enqueue(QUEUE, { id: "sent-1", payload: { text: "hi" }, sessionKey: KEY });
  const job = state.queue.claim(QUEUE, "w", { leaseMs: 60_000 });
  if (!job) throw new Error("nothing to claim");
  state.queue.beginSend(QUEUE, job.id, job.leaseId);
  state.queue.settle(QUEUE, job.id, job.leaseId, { platformMessageId: "tg-42" });
  state.queue.enqueue(QUEUE, { id: "doomed-1", payload: { text: "bye" }, sessionKey: KEY });
  const globalPath = state.db.path;
  state.close();
  const held = await runAndKill<{ claimed: string[]; expiresAt: number }>(CLAIMER, [
    "hold",
    home,
    "main",
    KEY,
    "gw",
    "2",
  ]);
  const sent = await runAndKill<{ begun: { id: string; leaseExpiresAt: number }[] }>(SENDER, [
    globalPath,
    QUEUE,
    "500",
    "1",
  ]);
  await sleepUntil(Math.max(held.expiresAt, ...sent.begun.map((b) => b.leaseExpiresAt)));
  return { home, heldIds: held.claimed, doomedId: sent.begun[0]?.id ?? "", researchInput };
}

/** The rows as stored, read with plain SQL behind the CLI's back. */
function storedRows(home: string) {
  const read = (path: string, sql: string) => {
    const db = openRawSqlite(path, { readonly: true });
    try {
      return db.prepare(sql).all();
    } finally {
      db.close();
    }
  };
  return {
    inputs: read(
      join(home, "agents/main/agent/agent.sqlite"),
      "SELECT input_id, state, lease_expires_at FROM inputs ORDER BY arrival_seq",
    ),
    deliveries: read(
      join(home, "state/state.sqlite"),
      "SELECT id, status, updated_at FROM delivery_queue_entries ORDER BY id",
    ),
  };
}

describe("agentstate inputs and deliveries after a crash", () => {
  it("show the killed turn's inputs as interrupted and its send as unknown, and change no row", async () => {
    const { home, heldIds, doomedId, researchInput } = await seed();
    const before = storedRows(home);
    expect(before.inputs.map((r) => (r as { state: string }).state)).toEqual([
      "claimed",
      "claimed",
    ]);

    const interrupted = cli(["inputs", "--state", "interrupted", "--json", "--home", home]);
    expect(interrupted.stderr).toBe("");
    expect(interrupted.status).toBe(0);
    const shown = JSON.parse(interrupted.stdout) as Record<string, unknown>[];
    expect(shown.map((i) => [i.agentId, i.inputId, i.state, i.storedState])).toEqual(
      heldIds.map((id) => ["main", id, "interrupted", "claimed"]),
    );

    const table = cli(["inputs", "--home", home]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^AGENT +INPUT +SESSION KEY +STATE +RECEIVED +ATTEMPTS/);
    expect(table.stdout.match(/ interrupted\* /g)).toHaveLength(2);
    expect(table.stdout).toContain(researchInput);
    expect(table.stdout).toContain("* lease lapsed, owner process gone");
    const research = cli(["inputs", "--agent", "research", "--json", "--home", home]);
    expect((JSON.parse(research.stdout) as { inputId: string }[]).map((i) => i.inputId)).toEqual([
      researchInput,
    ]);

    const unknown = cli(["deliveries", "--state", "unknown", "--json", "--home", home]);
    expect(unknown.status).toBe(0);
    const entries = JSON.parse(unknown.stdout) as Record<string, unknown>[];
    expect(entries.map((e) => [e.id, e.status])).toEqual([[doomedId, "unknown"]]);
    const receipts = cli(["deliveries", "--session-key", KEY, "--home", home]);
    expect(receipts.status).toBe(0);
    const lines = receipts.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^QUEUE +ID +STATUS +SESSION KEY +ENQUEUED +SEND STARTED +SETTLED/);
    expect(lines.find((l) => l.includes(doomedId))).toMatch(/ unknown /);
    expect(lines.find((l) => l.includes("sent-1"))).toMatch(/ sent .* tg-42 /);

    expect(storedRows(home)).toEqual(before);
  }, 60_000);

  it("refuses an unknown --state with exit 2, naming the allowed values", () => {
    const home = tempDir();
    openStateHome({ home }).close();
    const inputs = cli(["inputs", "--state", "lost", "--home", home]);
    expect(inputs.status).toBe(2);
    expect(inputs.stderr).toContain(
      '--state must be one of accepted, claimed, completed, interrupted, got "lost"',
    );
    const deliveries = cli(["deliveries", "--state", "gone", "--json", "--home", home]);
    expect(deliveries.status).toBe(2);
    expect(JSON.parse(deliveries.stderr).error.message).toContain(
      "--state must be one of pending, sending, sent, failed, unknown",
    );
    const unfiltered = cli(["deliveries", "--home", home]);
    expect(unfiltered.status).toBe(2);
    expect(unfiltered.stderr).toContain(
      "deliveries needs --session-key, --conversation or --agent",
    );
    expect(cli(["inputs", "--agent", "nobody", "--home", home]).status).toBe(3);
  });
});
