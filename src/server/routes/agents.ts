import { statSync } from "node:fs";
import { Hono } from "hono";
import type { ServerDeps } from "../deps.js";

/** Bytes of a database file and its WAL now (the registry's figure is from its last open). */
function sizeOnDisk(path: string): number | null {
  let total = 0;
  for (const file of [path, `${path}-wal`]) {
    try {
      total += statSync(file).size;
    } catch {
      if (file === path) return null;
    }
  }
  return total;
}

export function agentRoutes({ home }: ServerDeps): Hono {
  return new Hono().get("/agents", (c) => {
    const agents = home.listAgents().map((agent) => {
      const sizeBytes = sizeOnDisk(agent.dbPath);
      return {
        agentId: agent.agentId,
        createdAt: agent.createdAt,
        lastSeenAt: agent.lastSeenAt,
        schemaVersion: agent.schemaVersion,
        sizeBytes,
        /** False when the registry names a database that is not on disk. */
        present: sizeBytes !== null,
      };
    });
    return c.json({ agents });
  });
}
