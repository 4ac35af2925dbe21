import { Hono } from "hono";
import { listBackups } from "../../backup/list-backups.js";
import type { ServerDeps } from "../deps.js";
import { integer, params, query, z } from "../validation.js";

const limitQuery = z.strictObject({ limit: integer(1, 1000).optional() });
const runParams = z.object({ runId: z.string().min(1).max(200) });

/** The audit trail of the home: legacy migration runs with their sources, and backup runs. */
export function historyRoutes({ home }: ServerDeps): Hono {
  return new Hono()
    .get("/migrations", (c) => {
      const { limit = 50 } = query(c, limitQuery);
      return c.json({ runs: home.migrations.listRuns(limit) });
    })
    .get("/migrations/:runId", (c) => {
      const { runId } = params(c, runParams);
      query(c, z.strictObject({}));
      const run = home.migrations.getRun(runId);
      return c.json({ run, sources: home.migrations.sourcesOfRun(runId) });
    })
    .get("/backups", (c) => {
      const { limit = 50 } = query(c, limitQuery);
      return c.json({ runs: listBackups(home, { limit }) });
    });
}
