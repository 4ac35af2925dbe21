import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { agentDbPath, familiesBySql, withRaw } from "../../src/server/test-support/chart-oracle.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";

// The built server measures storage on a thread of its own (the unit tests, from the TypeScript
// sources, measure inline): its answers against dbstat read by the test, before and after
// another process commits.

const tempDir = useTempDirs();
beforeAll(requireBuild);
const running: ChildProcess[] = [];

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

function serve(home: string): Promise<string> {
  const child = spawn(process.execPath, [CLI, "serve", "--home", home, "--port", "0"], {
    env: { ...process.env, AGENTSTATE_HOME: "", AGENTSTATE_TOKEN: "" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  running.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /(http:\/\/\S+?)\/?\s/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}`)));
  });
}

function append(home: string, sessionId: string, count: number): void {
  const writer = openStateHome({ home });
  const text = "words that take room in the file ".repeat(40);
  writer.transcripts.appendMany(
    { agentId: "main", sessionId },
    Array.from({ length: count }, (_, i) => ({
      type: "message",
      message: { role: "user", content: `${i} ${text}` },
    })),
  );
  writer.close();
}

interface Answer {
  stale: boolean;
  measuredAt: number;
  storage: { fileBytes: number; freeBytes: number; families: Record<string, number> };
}

function bySql(path: string) {
  const { file, free, ...families } = withRaw(path, familiesBySql);
  return { fileBytes: file, freeBytes: free, families };
}

describe("agentstate serve: the storage chart", () => {
  it("answers from its storage thread, stale after a commit until measured again", async () => {
    const home = tempDir();
    append(home, "first", 200);
    const base = await serve(home);
    const ask = async (): Promise<Answer> => {
      const res = await fetch(`${base}/api/charts/storage?agent=main`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { agents: Answer[] };
      return body.agents[0] as Answer;
    };
    const fresh = async (): Promise<Answer> => {
      for (let i = 0; i < 100; i++) {
        const answer = await ask();
        if (!answer.stale) return answer;
        await sleep(50);
      }
      throw new Error("the storage answer stayed stale");
    };
    // Past the window in which a file's mtime is too close to trust, so the answer is kept.
    await sleep(300);
    await fresh();
    const before = await fresh();
    const path = agentDbPath(home, "main");
    expect(before.storage).toMatchObject(bySql(path));

    append(home, "second", 2000);
    const kept = await ask();
    expect(kept.stale).toBe(true);
    expect(kept.storage).toEqual(before.storage);
    const after = await fresh();
    expect(after.measuredAt).toBeGreaterThan(before.measuredAt);
    expect(after.storage.families.events).toBeGreaterThan(before.storage.families.events ?? 0);
    expect(after.storage).toMatchObject(bySql(path));
  });
});
