import type { Command } from "commander";
import type { StateHome } from "../../home.js";
import { type SweepReport, sweepExpired } from "../../stores/global/expiry.js";
import {
  checkRetention,
  pruneInputs,
  pruneReceipts,
  type RetentionOptions,
  type RetentionPolicy,
} from "../../stores/retention.js";
import {
  addExamples,
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withHome,
} from "../common.js";
import { printJson, renderTable } from "../output.js";

export interface GcDatabaseReport extends Partial<SweepReport> {
  /** null for the global database. */
  agentId: string | null;
  /**
   * Rows past the retention policy, by table: settled deliveries (`delivery_queue_entries`) in
   * the global database, completed inputs (`inputs`) in an agent's.
   */
  retained?: Record<string, number>;
  /** Set when the database could not be opened or swept; the other databases still were. */
  error?: string;
}

export interface GcReport {
  home: string;
  sweptAt: number;
  databases: GcDatabaseReport[];
  /** Expired rows removed. */
  total: number;
  /** Rows removed by the retention policy. */
  retainedTotal: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Sweeps expired rows, and rows past `retention` (default: the home's policy), from the global
 * database and from every registered agent's database.
 */
export function collectGarbage(
  home: StateHome,
  now: number = Date.now(),
  retention: RetentionPolicy = home.retention,
): GcReport {
  const databases: GcDatabaseReport[] = [
    {
      agentId: null,
      ...sweepExpired(home.db, now),
      retained: { delivery_queue_entries: pruneReceipts(home.db, retention, now) },
    },
  ];
  for (const { agentId } of home.listAgents()) {
    try {
      const swept = home.withAgent(
        agentId,
        ({ db }) => ({
          ...sweepExpired(db, now),
          retained: { inputs: pruneInputs(db, retention, now) },
        }),
        { create: false },
      );
      databases.push({ agentId, ...swept });
      // Opens no longer write the registry: gc keeps its sizes and last-seen times current.
      home.refreshAgentRecord(agentId);
    } catch (error) {
      databases.push({ agentId, error: error instanceof Error ? error.message : String(error) });
    }
  }
  const total = databases.reduce((sum, db) => sum + (db.total ?? 0), 0);
  const retainedTotal = databases.reduce(
    (sum, db) => sum + Object.values(db.retained ?? {}).reduce((a, b) => a + b, 0),
    0,
  );
  return { home: home.path, sweptAt: now, databases, total, retainedTotal };
}

function render(report: GcReport): string {
  const rows = report.databases.flatMap((db) => {
    const name = db.agentId ?? "global";
    if (db.error !== undefined) return [{ name, table: "-", removed: `error: ${db.error}` }];
    const row = (table: string, removed: number) => ({ name, table, removed: String(removed) });
    return [
      ...Object.entries(db.tables ?? {}).map(([table, removed]) => row(table, removed)),
      ...Object.entries(db.retained ?? {}).map(([table, n]) => row(`${table} (retention)`, n)),
    ];
  });
  const table = renderTable(rows, [
    { header: "DATABASE", value: (r) => r.name },
    { header: "TABLE", value: (r) => r.table },
    { header: "REMOVED", value: (r) => r.removed, align: "right" },
  ]);
  const retained = `${report.retainedTotal} row${report.retainedTotal === 1 ? "" : "s"} past retention removed`;
  return `${table}\n\n${report.total} expired row${report.total === 1 ? "" : "s"} removed; ${retained}`;
}

interface GcOptions extends HomeOptions, JsonOption {
  keepDays?: string;
  keepInputs?: string;
  keepReceipts?: string;
}

/** The retention policy of the flags given, over the defaults. */
function retentionOf(options: GcOptions): RetentionPolicy {
  const given: RetentionOptions = {};
  if (options.keepDays !== undefined) {
    const days = parseInteger("--keep-days", options.keepDays, 0, 100_000);
    given.inputsMaxAgeMs = days * DAY_MS;
    given.receiptsMaxAgeMs = days * DAY_MS;
  }
  if (options.keepInputs !== undefined) {
    given.inputsPerSession = parseInteger("--keep-inputs", options.keepInputs, 0, 1e9);
  }
  if (options.keepReceipts !== undefined) {
    given.receiptsPerQueue = parseInteger("--keep-receipts", options.keepReceipts, 0, 1e9);
  }
  return checkRetention(given);
}

export function registerGc(program: Command): void {
  const command = program
    .command("gc")
    .description(
      "delete expired rows (TTL) from the global database and every agent database, and completed inputs and settled delivery receipts past retention; refresh each agent's recorded size and last-seen time",
    )
    .option(
      "--keep-days <days>",
      "keep completed inputs and sent or failed deliveries this many days after they finished (default 30)",
    )
    .option(
      "--keep-inputs <n>",
      "keep at most this many completed inputs per session key, the latest (default 1000)",
    )
    .option(
      "--keep-receipts <n>",
      "keep at most this many sent or failed deliveries per queue, the latest (default 100000)",
    );
  addExamples(command, [
    "agentstate gc",
    "agentstate gc --home ~/.agentstate --json",
    "agentstate gc --keep-days 7 --keep-inputs 200",
  ]);
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: GcOptions) => {
    const retention = retentionOf(options);
    const report = withHome(options, false, (home) => collectGarbage(home, Date.now(), retention));
    if (options.json) printJson(report);
    else process.stdout.write(`${render(report)}\n`);
    if (report.databases.some((db) => db.error !== undefined)) process.exitCode = 1;
  });
}
