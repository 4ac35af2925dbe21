import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp } from "./app.js";
import { agentDbPath, familiesBySql, withRaw } from "./test-support/chart-oracle.js";

const tempDir = useTempDirs();
const ORIGIN = "http://127.0.0.1:4711";

interface Storage {
  fileBytes: number;
  freeBytes: number;
  families: Record<string, number>;
}

/** What dbstat says of the file now, through a connection of its own, in the route's shape. */
function bySql(path: string): Storage {
  const sql = withRaw(path, familiesBySql);
  const { file, free, ...families } = sql;
  return { fileBytes: file, freeBytes: free, families };
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

describe("GET /api/charts/storage, answered from a cache", () => {
  it("serves the breakdown again unchanged, and a fresh one once another writer committed", async () => {
    const dir = tempDir();
    append(dir, "first", 200);
    const home = openStateHome({ home: dir });
    const { app, close } = createApp({ home });
    const ask = async (): Promise<Storage & { stale: boolean }> => {
      const res = await app.request(`${ORIGIN}/api/charts/storage?agent=main`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { agents: { storage: Storage; stale: boolean }[] };
      const [agent] = body.agents;
      if (agent === undefined) throw new Error("no storage for main");
      const { fileBytes, freeBytes, families } = agent.storage;
      return { fileBytes, freeBytes, families, stale: agent.stale };
    };
    /** The first answer not marked stale: one ask after a commit starts the new measurement. */
    const storage = async (): Promise<Storage> => {
      for (let i = 0; i < 50; i++) {
        const { stale, ...rest } = await ask();
        if (!stale) return rest;
        await sleep(20);
      }
      throw new Error("the storage answer stayed stale");
    };
    const path = agentDbPath(dir, "main");
    try {
      // Past the window in which a file's mtime is too close to trust, so the answer is kept.
      await sleep(250);
      const before = await storage();
      expect(before).toEqual(bySql(path));
      expect(await storage()).toEqual(before);

      append(dir, "second", 2000);
      // Until measured again, the kept answer is served, and says it is stale.
      const { stale, ...kept } = await ask();
      expect(stale).toBe(true);
      expect(kept).toEqual(before);
      const after = await storage();
      expect(after.families.events).toBeGreaterThan(before.families.events ?? 0);
      expect(after).toEqual(bySql(path));

      // A commit straight after a kept answer is seen too.
      await sleep(250);
      expect(await storage()).toEqual(bySql(path));
      append(dir, "third", 500);
      expect(await storage()).toEqual(bySql(path));
    } finally {
      close();
      home.close();
    }
  });
});
