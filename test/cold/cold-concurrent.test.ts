import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isStateError } from "../../src/db/errors.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";

const CHILD = fileURLToPath(new URL("./append-child.mjs", import.meta.url));
const APPENDS = 400;
const tempDir = useTempDirs();

describe("moves racing appends from another process", () => {
  it("each move commits or refuses with E_CONFLICT, and every appended event is there once", async () => {
    requireBuild();
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    const agent = home.agent("main");
    for (let i = 0; i < 200; i++) {
      agent.transcripts.append("s1", {
        type: "message",
        message: { role: "user", content: `seed ${i}` },
      });
    }
    const child = spawn(process.execPath, [CHILD, dir, "main", "s1", String(APPENDS)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    let running = true;
    void exited.then(() => {
      running = false;
    });
    const outcomes = { moved: 0, conflict: 0 };
    while (running) {
      try {
        if (!agent.cold.move("s1").alreadyCold) outcomes.moved++;
      } catch (error) {
        if (!isStateError(error, "E_CONFLICT")) throw error;
        outcomes.conflict++;
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(await exited).toBe(0);
    expect(out).toContain(`done ${APPENDS}`);
    expect(outcomes.moved).toBeGreaterThan(0);

    const events = agent.transcripts.read("s1", { limit: 10_000 });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(new Set(events.map((e) => e.event.id)).size).toBe(events.length);
    const texts = events.flatMap((e) => {
      const content = (e.event.message as { content?: unknown } | undefined)?.content;
      return typeof content === "string" ? [content] : [];
    });
    expect(texts.filter((t) => t.startsWith("seed"))).toHaveLength(200);
    expect(texts.filter((t) => t.startsWith("concurrent")).sort()).toEqual(
      Array.from({ length: APPENDS }, (_, i) => `concurrent ${i}`).sort(),
    );
    expect(agent.search.search("concurrent", { limit: 500 })).toHaveLength(APPENDS);
    expect(agent.db.integrityCheck()).toEqual(["ok"]);
    // Only the archive of the current cold row (if any) is left.
    agent.cold.sweep();
    const info = agent.cold.info("s1");
    // Beside the cold index file (which the first move made).
    const files = readdirSync(join(dir, "agents", "main", "agent", "cold")).sort();
    expect(files).toEqual(
      [...(info === undefined ? [] : [info.archivePath.split("/").at(-1)]), "index.sqlite"].sort(),
    );
    home.close();
  }, 120_000);
});
