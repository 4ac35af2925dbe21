import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../../src/home.js";
import { runDemoConversation } from "../../src/worker/demo-conversation.js";
import { importBuilt } from "../support/built.js";
import { requireWorkerBuild, useTempDirs } from "./support.js";

const tempDir = useTempDirs();
let home: StateHome | undefined;
beforeAll(requireWorkerBuild);
afterEach(() => home?.close());

describe("runDemoConversation", () => {
  it("runs three scripted turns and leaves the conversation in the transcript", async () => {
    const path = tempDir();
    // From the TypeScript sources there is no worker entry beside the runtime: auto runs inline.
    const demo = await runDemoConversation(path, "main", { mode: "auto" });
    expect(demo.turns.map((t) => t.status)).toEqual(["completed", "completed", "completed"]);
    expect(demo.turns.at(-1)?.text).toBe("Four items: coffee, bread, tomatoes and oranges.");
    expect(new Set(demo.turns.map((t) => t.sessionId))).toEqual(new Set([demo.sessionId]));
    expect(demo.events.filter((e) => e.kind === "final")).toHaveLength(3);

    home = openStateHome({ home: path, create: false });
    const agent = home.agent("main");
    const stored = agent.transcripts
      .read(demo.sessionId)
      .map((e) => e.event.message as { role: string } | undefined);
    expect(stored.map((m) => m?.role ?? "session")).toEqual([
      "session",
      ...["user", "assistant", "assistant", "toolResult", "assistant"],
      ...["user", "assistant", "toolResult", "assistant"],
      ...["user", "assistant", "toolResult", "assistant"],
    ]);
    expect(agent.vfs.namespace("scratch").readFile("/lists/shopping.md", "utf8")).toContain(
      "- oranges",
    );
    expect(agent.sessions.get(demo.sessionKey)?.entry).toMatchObject({
      sessionId: demo.sessionId,
      turnCount: 3,
    });
  });

  it("runs the same conversation in worker threads from the built package", async () => {
    const built = await importBuilt<{ runDemoConversation: typeof runDemoConversation }>();
    const demo = await built.runDemoConversation(tempDir(), "demo-agent", { mode: "worker" });
    expect(demo.turns.map((t) => [t.status, t.mode])).toEqual([
      ["completed", "thread"],
      ["completed", "thread"],
      ["completed", "thread"],
    ]);
  });
});
