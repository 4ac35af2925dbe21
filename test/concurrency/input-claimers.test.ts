import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { requireBuild } from "../support/built.js";

const CLAIMER = fileURLToPath(new URL("../fixtures/input-claimer.mjs", import.meta.url));
const KEY = "agent:main:main";

interface Drained {
  owner: string;
  claimed: string[];
  completed: string[];
  errors: string[];
}

/** Runs the claimer and resolves with the JSON line it prints (once it has printed one). */
function run<T>(args: string[]): { child: ChildProcess; line: Promise<T> } {
  const child = spawn(process.execPath, [CLAIMER, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = new Promise<T>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (text) =>
      resolve(JSON.parse(text) as T),
    );
    child.once("exit", (code, signal) =>
      reject(new Error(`claimer exited early (${code ?? signal})`)),
    );
  });
  return { child, line };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("inputs across processes", () => {
  let dir: string;
  beforeAll(() => {
    requireBuild();
    dir = mkdtempSync(join(tmpdir(), "agentstate-inputs-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("two claimer processes complete each of 600 inputs exactly once, replies written once", async () => {
    const homeDir = join(dir, "drain");
    const home = openStateHome({ home: homeDir });
    const accepted = new Set<string>();
    home.agent("main").db.tx(() => {
      for (let i = 0; i < 600; i++) {
        const { input } = home.inputs.accept("main", KEY, { idempotencyKey: `m${i}`, payload: i });
        accepted.add(input.inputId);
      }
    });
    const results = await Promise.all(
      ["p1", "p2"].map((owner) => run<Drained>(["drain", homeDir, "main", KEY, owner, "2"]).line),
    );
    for (const result of results) expect(result.errors, result.owner).toEqual([]);
    const claimed = results.flatMap((r) => r.claimed);
    expect(claimed).toHaveLength(600);
    expect(new Set(claimed)).toEqual(accepted);
    // The two really competed.
    for (const result of results) expect(result.completed.length, result.owner).toBeGreaterThan(0);

    const inputs = home.inputs.list("main", { limit: 1000 });
    expect(inputs.every((i) => i.state === "completed" && i.attempts === 1)).toBe(true);
    const events = home.transcripts
      .read({ agentId: "main", sessionId: "s1" }, { limit: 10_000 })
      .filter((e) => e.event.type === "message");
    expect(events).toHaveLength(600);
    // Each input's outcome names exactly its own reply, and no reply was written twice.
    const textById = new Map(events.map((e) => [e.event.id, JSON.stringify(e.event.message)]));
    for (const input of inputs) {
      expect(input.outcome?.eventIds).toHaveLength(1);
      expect(textById.get(input.outcome?.eventIds[0] as string)).toContain(
        `reply to ${input.inputId}`,
      );
    }
    home.close();
  });

  it("a claimer killed mid-turn leaves its inputs interrupted and its tool call reported", async () => {
    const homeDir = join(dir, "killed");
    const { child, line } = run<{ inputIds: string[]; claimed: string[]; expiresAt: number }>([
      "hold",
      homeDir,
      "main",
      KEY,
      "doomed",
      "3",
    ]);
    const held = await line;
    expect(held.claimed).toEqual(held.inputIds);
    process.kill(child.pid as number, "SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));

    const home = openStateHome({ home: homeDir });
    // The owner is dead but its lease has not lapsed: it may be on another host, so nothing is
    // judged yet.
    const early = home.inputs.recover("main", KEY);
    if (Date.now() < held.expiresAt) expect(early.interrupted).toEqual([]);
    await sleep(held.expiresAt - Date.now() + 20);
    const recovered = home.inputs.recover("main", KEY);
    expect(recovered.interrupted.map((i) => i.inputId)).toEqual(held.inputIds);
    expect(recovered.interrupted[0]?.lease?.owner).toBe("doomed");
    expect(recovered.danglingToolCalls).toEqual([
      expect.objectContaining({ toolCallId: "call-1", name: "exec", arguments: { cmd: "deploy" } }),
    ]);
    // Nothing hands them out again until the gateway decides; a requeued one is claimable.
    expect(home.inputs.claim("main", KEY, "survivor", { leaseMs: 1000 })).toEqual([]);
    home.inputs.requeue("main", held.inputIds[0] as string);
    const [again] = home.inputs.claim("main", KEY, "survivor", { leaseMs: 1000 });
    expect(again).toMatchObject({ inputId: held.inputIds[0], attempts: 2 });
    // A redelivery of a held message is the same input, not a new one.
    const retry = home.inputs.accept("main", KEY, { idempotencyKey: "held-1", payload: {} });
    expect(retry).toMatchObject({
      duplicate: true,
      input: { inputId: held.inputIds[1], state: "interrupted" },
    });
    home.close();
  });
});
