import { Hono } from "hono";
import { listBackups } from "../../backup/list-backups.js";
import type { StateHome } from "../../home.js";
import type { QuarantinedLine } from "../../stores/global/migration-quarantine-store.js";
import type { JsonValue } from "../../stores/json.js";
import type { ServerDeps } from "../deps.js";
import { integer, params, query, z } from "../validation.js";

const limitQuery = z.strictObject({ limit: integer(1, 1000).optional() });
const runParams = z.object({ runId: z.string().min(1).max(200) });
const QUARANTINE_LIMIT = 10_000;

interface RunProblem {
  path: string;
  line: number | null;
  key: string | null;
  reason: string;
  quarantined: boolean;
}

function isProblemList(value: JsonValue | undefined): value is JsonValue[] {
  return Array.isArray(value);
}

/**
 * Each problem of a run by file and line (or key). A run records its own; runs of older releases
 * did not, so their sources' reports (as their last run left them) stand in.
 */
function problemsOfRun(home: StateHome, runId: string): RunProblem[] {
  const own = home.migrations.getRun(runId).report.problems;
  if (isProblemList(own)) return own as unknown as RunProblem[];
  return home.migrations.sourcesOfRun(runId).flatMap((source) => {
    const listed = source.report.problems;
    if (!isProblemList(listed)) return [];
    return (listed as unknown as Omit<RunProblem, "path" | "quarantined">[]).map((p) => ({
      path: source.path,
      line: p.line ?? null,
      key: p.key ?? null,
      reason: p.reason,
      quarantined: false,
    }));
  });
}

/** A quarantined line for the dashboard: its bytes in base64, and as text where they are text. */
function quarantinedJson(line: QuarantinedLine) {
  return {
    path: line.path,
    line: line.line,
    reason: line.reason,
    kind: line.kind,
    runId: line.runId,
    quarantinedAt: line.quarantinedAt,
    bytes: line.bytes.length,
    base64: line.bytes.toString("base64"),
    // U+FFFD marks bytes that are not UTF-8; `base64` is the faithful copy.
    text: line.bytes.toString("utf8"),
  };
}

/** The audit trail of the home: legacy migration runs with their sources, and backup runs. */
export function historyRoutes({ home }: ServerDeps): Hono {
  return new Hono()
    .get("/migrations", (c) => {
      const { limit = 50 } = query(c, limitQuery);
      const counts = home.quarantine.countsByRun();
      const runs = home.migrations.listRuns(limit).map((run) => ({
        ...run,
        problemCount: isProblemList(run.report.problems) ? run.report.problems.length : null,
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
