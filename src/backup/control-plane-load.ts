import { StateError } from "../db/errors.js";
import { type PgTarget, pgTarget, requirePgTool, runPgTool } from "./pg-tools.js";

/** The ledger every agentstate control plane on PostgreSQL has (see control-plane/pg-migrate.ts). */
const LEDGER = "agentstate_schema_migrations";

export interface ControlPlaneLoader {
  server: string;
  /** Loads a dump in one transaction; on failure the database is left as it was. */
  load(file: string): Promise<void>;
}

/** The shell command an operator runs to load a restored dump by hand. */
export function loadCommand(file: string, database = "<empty database URL>"): string {
  return `psql -v ON_ERROR_STOP=1 --single-transaction --dbname '${database}' -f '${file}'`;
}

function psqlFailure(target: PgTarget, doing: string, status: number | null, stderr: string) {
  const how = status === null ? "could not be run" : `failed (exit ${status})`;
  return new StateError(
    "E_IO",
    `psql ${how} ${doing} ${target.server}: ${stderr || "no message"}`,
    { details: { tool: "psql", server: target.server } },
  );
}

async function hasAgentstateTables(psql: string, target: PgTarget): Promise<boolean> {
  const sql = `SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = '${LEDGER}'`;
  const args = ["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql];
  const run = await runPgTool(psql, [...args, `--dbname=${target.dbname}`], target);
  if (run.status !== 0) throw psqlFailure(target, "checking", run.status, run.stderr);
  return run.stdout.trim() !== "0";
}

/**
 * Gets ready to load a control plane into the database at `url`: psql is found and the database
 * is reachable and holds no agentstate control plane (a load would mix two clusters' leases and
 * queues, so one that does is refused, always, with `E_CONFLICT`). Done before the home is
 * touched, so a refusal leaves everything as it was.
 */
export async function prepareControlPlaneLoad(url: string): Promise<ControlPlaneLoader> {
  const target = pgTarget(url, "the control plane URL");
  const psql = requirePgTool("psql", target, "load the control plane into");
  if (await hasAgentstateTables(psql, target)) {
    throw new StateError(
      "E_CONFLICT",
      `${target.server} already holds an agentstate control plane (table ${LEDGER}); restore into a new, empty database (createdb) and point --control-plane at it`,
      { details: { server: target.server } },
    );
  }
  const load = async (file: string) => {
    const args = ["-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", file];
    const run = await runPgTool(psql, [...args, `--dbname=${target.dbname}`], target);
    if (run.status !== 0)
      throw psqlFailure(target, "loading the control plane into", run.status, run.stderr);
  };
  return { server: target.server, load };
}
