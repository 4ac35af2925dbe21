import { Hono } from "hono";
import { listBackups } from "../../backup/list-backups.js";
import { problemsOfRun, quarantinedLineJson } from "../../doctor/run-problems.js";
import type { QuarantinedLine } from "../../stores/global/migration-quarantine-store.js";
import type { ServerDeps } from "../deps.js";
import { integer, params, query, z } from "../validation.js";

const limitQuery = z.strictObject({ limit: integer(1, 1000).optional() });
const runParams = z.object({ runId: z.string().min(1).max(200) });
const QUARANTINE_LIMIT = 10_000;

/** A quarantined line for the dashboard, also as text where its bytes are text. */
function quarantinedJson(line: QuarantinedLine) {
  // U+FFFD marks bytes that are not UTF-8; `base64` is the faithful copy.
  return { ...quarantinedLineJson(line), text: line.bytes.toString("utf8") };
}

/** The audit trail of the home: legacy migration runs with their sources, and backup runs. */
export function historyRoutes({ home }: ServerDeps): Hono {
  return new Hono()
    .get("/migrations", (c) => {
      const { limit = 50 } = query(c, limitQuery);
      const counts = home.quarantine.countsByRun();
      const runs = home.migrations.listRuns(limit).map((run) => ({
        ...run,
        problemCount: Array.isArray(run.report.problems) ? run.report.problems.length : null,
        quarantined: counts.get(run.id) ?? 0,
      }));
      return c.json({ runs });
    })
    .get("/migrations/:runId", (c) => {
      const { runId } = params(c, runParams);
      query(c, z.strictObject({}));
      const run = home.migrations.getRun(runId);
      return c.json({
        run,
        sources: home.migrations.sourcesOfRun(runId),
        problems: problemsOfRun(home, runId),
        quarantined: home.quarantine.list({ runId, limit: QUARANTINE_LIMIT }).map(quarantinedJson),
      });
    })
    .get("/quarantine", (c) => {
      query(c, z.strictObject({}));
      return c.json({
        lines: home.quarantine.list({ limit: QUARANTINE_LIMIT }).map(quarantinedJson),
      });
    })
    .get("/backups", (c) => {
      const { limit = 50 } = query(c, limitQuery);
      return c.json({ runs: listBackups(home, { limit }) });
    });
}
