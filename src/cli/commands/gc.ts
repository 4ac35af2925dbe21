import type { Command } from "commander";
import type { StateHome } from "../../home.js";
import { type SweepReport, sweepExpired } from "../../stores/global/expiry.js";
import {
  addExamples,
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  withHome,
} from "../common.js";
import { printJson, renderTable } from "../output.js";

export interface GcDatabaseReport extends Partial<SweepReport> {
  /** null for the global database. */
  agentId: string | null;
  /** Set when the database could not be opened or swept; the other databases still were. */
  error?: string;
}

export interface GcReport {
  home: string;
  sweptAt: number;
  databases: GcDatabaseReport[];
  total: number;
}

/** Sweeps expired rows from the global database and from every registered agent's database. */
export function collectGarbage(home: StateHome, now: number = Date.now()): GcReport {
  const databases: GcDatabaseReport[] = [{ agentId: null, ...sweepExpired(home.db, now) }];
  for (const { agentId } of home.listAgents()) {
    try {
      const swept = home.withAgent(agentId, ({ db }) => sweepExpired(db, now), { create: false });
      databases.push({ agentId, ...swept });
      // Opens no longer write the registry: gc keeps its sizes and last-seen times current.
      home.refreshAgentRecord(agentId);
    } catch (error) {
      databases.push({ agentId, error: error instanceof Error ? error.message : String(error) });
    }
  }
  const total = databases.reduce((sum, db) => sum + (db.total ?? 0), 0);
  return { home: home.path, sweptAt: now, databases, total };
}

function render(report: GcReport): string {
  const rows = report.databases.flatMap((db) => {
    const name = db.agentId ?? "global";
    if (db.error !== undefined) return [{ name, table: "-", removed: `error: ${db.error}` }];
    return Object.entries(db.tables ?? {}).map(([table, removed]) => ({
      name,
      table,
      removed: String(removed),
    }));
  });
  const table = renderTable(rows, [
    { header: "DATABASE", value: (r) => r.name },
    { header: "TABLE", value: (r) => r.table },
    { header: "REMOVED", value: (r) => r.removed, align: "right" },
  ]);
  return `${table}\n\n${report.total} expired row${report.total === 1 ? "" : "s"} removed`;
}

export function registerGc(program: Command): void {
  const command = program
    .command("gc")
    .description(
      "delete expired rows (TTL) from the global database and every agent database; refresh each agent's recorded size and last-seen time",
    );
  addExamples(command, ["agentstate gc", "agentstate gc --home ~/.agentstate --json"]);
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: HomeOptions & JsonOption) => {
    const report = withHome(options, false, (home) => collectGarbage(home));
    if (options.json) printJson(report);
    else process.stdout.write(`${render(report)}\n`);
    if (report.databases.some((db) => db.error !== undefined)) process.exitCode = 1;
  });
}
