import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { VfsStore } from "../../src/stores/agent/vfs-store.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const KEY = "agent:main:main";
const HOLDER = new URL("../fixtures/write-lock-holder.mjs", import.meta.url).pathname;
/** Far below the 30 s busy timeout a command waiting on the write lock would sit out. */
const PROMPT_MS = 8000;

function seed(): { home: string; sessionId: string; files: string[] } {
  const home = tempDir();
  const state = openStateHome({ home });
  const { sessionId } = state.sessions.start("main", KEY);
  const message = { role: "user", content: [{ type: "text", text: "water the basil" }] };
  state.transcripts.append({ agentId: "main", sessionId }, { type: "message", message });
  state.kv.set("prefs", "theme", "dark");
  state.cron.add({ id: "morning", agentId: "main", schedule: { kind: "every", everyMs: 60_000 } });
  state.cron.recordRun("morning", { status: "ok", ranAt: Date.now(), durationMs: 5 });
  state.memory.upsertFact("main", {
    scope: "user",
    key: "name",
    category: "background",
    value: "Dana",
    recallPolicy: "always",
  });
  new VfsStore(state.agent("main").db).namespace().writeFile("/todo.txt", "basil\n");
  state.inputs.accept("main", KEY, { idempotencyKey: "m1", payload: { text: "water the basil" } });
  state.queue.enqueue("outbound-delivery", { payload: { text: "done" }, sessionKey: KEY });
  const files = [state.db.path, state.agent("main").db.path];
  state.close();
  return { home, sessionId, files };
}

const holders: ChildProcess[] = [];
afterEach(async () => {
  for (const holder of holders.splice(0)) {
    holder.stdin?.end();
    if (holder.exitCode === null) await once(holder, "exit");
  }
});

/** Another process in the middle of a write transaction on each of `files`. */
async function holdWriteLocks(files: readonly string[]): Promise<ChildProcess> {
  const holder = spawn(process.execPath, [HOLDER, ...files], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  holders.push(holder);
  const [line] = (await once(holder.stdout as NodeJS.ReadableStream, "data")) as [Buffer];
  expect(line.toString()).toBe("locked\n");
  return holder;
}

describe("commands that only read, beside a writer holding the write lock", () => {
  it("each succeeds at once, without waiting for the busy timeout", async () => {
    const { home, sessionId, files } = seed();
    await holdWriteLocks(files);
    const agent = ["--agent", "main"];
    const commands: string[][] = [
      ["status"],
      ["sessions", "list", ...agent],
      ["sessions", "show", KEY, ...agent],
      ["transcript", "list"],
      ["transcript", "show", sessionId, ...agent],
      ["transcript", "search", "basil"],
      ["transcript", "export", sessionId, ...agent],
      ["kv", "get", "prefs", "theme"],
      ["kv", "list", "prefs"],
      ["memory", "topics", ...agent],
      ["memory", "facts", ...agent],
      ["cron", "list"],
      ["cron", "runs", "morning"],
      ["vfs", "ls", ...agent],
      ["vfs", "cat", "/todo.txt", ...agent],
      ["vfs", "export", ...agent, "--out", join(tempDir(), "out")],
      ["backup", "list"],
      ["inputs"],
      ["inputs", "--state", "interrupted", ...agent],
      ["deliveries", "--session-key", KEY],
      ["deliveries", "--state", "unknown"],
      ["usage"],
      ["usage", "--by", "model", ...agent],
    ];
    for (const command of commands) {
      const started = Date.now();
      const result = cli([...command, "--home", home]);
      const took = Date.now() - started;
      expect(result.stderr, command.join(" ")).toBe("");
      expect(result.status, command.join(" ")).toBe(0);
      expect(took, command.join(" ")).toBeLessThan(PROMPT_MS);
    }
    expect(cli(["kv", "get", "prefs", "theme", "--home", home]).stdout).toContain("dark");
  }, 120_000);
});

describe("commands that write the whole home, beside a live writer", () => {
  it("doctor --fix is refused, naming the writer, and changes nothing", async () => {
    const { home, files } = seed();
    const holder = await holdWriteLocks(files);
    const result = cli(["doctor", "--fix", "--home", home]);
    expect(result.status).toBe(5);
    expect(result.stderr).toContain(`pid ${holder.pid}`);
    expect(result.stdout).toBe("");
  });
});
