import { Hono } from "hono";
import type { Database } from "../../db/database.js";
import type { DatabaseStatus } from "../../status/describe-home.js";
import { countRows, vacuumStatus } from "../../status/describe-home.js";
import type { ServerDeps } from "../deps.js";
import { flag, query, z } from "../validation.js";

const statusQuery = z.strictObject({ check: flag.optional() });

function describe(db: Database, agentId: string | null, check: boolean): DatabaseStatus {
  return {
    role: db.role,
    agentId,
    path: db.path,
    bytes: db.sizeBytes(),
    schemaVersion: db.schemaVersion,
    quickCheck: check ? db.quickCheck().join("; ") : "not run",
    tables: countRows(db),
    ...vacuumStatus(db),
  };
}

/**
 * What `agentstate status` shows: every database with its size, schema and row counts. The
 * health check reads whole databases and the server answers nothing else meanwhile, so it runs
 * only when asked for (`?check=true`).
 */
export function statusRoutes({ home }: ServerDeps, server: { write: boolean }): Hono {
  return new Hono().get("/status", (c) => {
    const { check = false } = query(c, statusQuery);
    const databases = [describe(home.db, null, check)];
    for (const { agentId } of home.listAgents()) {
      databases.push(
        home.withAgent(agentId, ({ db }) => describe(db, agentId, check), { create: false }),
      );
    }
    return c.json({ home: home.path, databases, server });
  });
}
