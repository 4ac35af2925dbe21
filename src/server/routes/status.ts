import { Hono } from "hono";
import type { Database } from "../../db/database.js";
import type { DatabaseStatus } from "../../status/describe-home.js";
import { countRows, vacuumStatus } from "../../status/describe-home.js";
import type { QuickCheckRecord } from "../../stores/global/quick-check-store.js";
import type { ServerDeps } from "../deps.js";
import { flag, query, z } from "../validation.js";

const statusQuery = z.strictObject({ check: flag.optional() });

function describe(
  db: Database,
  agentId: string | null,
  check: boolean,
  last: QuickCheckRecord | undefined,
): DatabaseStatus {
  return {
    role: db.role,
    agentId,
    path: db.path,
    bytes: db.sizeBytes(),
    schemaVersion: db.schemaVersion,
    quickCheck: check ? db.quickCheck().join("; ") : "not run",
    lastQuickCheck: last ? { result: last.result, at: last.checkedAt } : null,
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
    const databases = [describe(home.db, null, check, undefined)];
    const checks = new Map(home.quickChecks.list().map((last) => [last.agentId, last]));
    for (const { agentId } of home.listAgents()) {
      const last = checks.get(agentId);
      databases.push(
        home.withAgent(agentId, ({ db }) => describe(db, agentId, check, last), { create: false }),
      );
    }
    return c.json({ home: home.path, databases, server });
  });
}
