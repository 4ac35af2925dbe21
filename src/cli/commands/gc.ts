import type { Command } from "commander";
import type { Database } from "../../db/database.js";
import { type VacuumResult, vacuumDatabase } from "../../db/vacuum.js";
import type { StateHome } from "../../home.js";
import { quickCheckAgent } from "../../status/quick-check-canary.js";
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
import { formatBytes, printJson, renderTable } from "../output.js";

export interface GcDatabaseReport extends Partial<SweepReport> {
  /** null for the global database. */
  agentId: string | null;
  /**
   * Rows past the retention policy, by table: settled deliveries (`delivery_queue_entries`) in
   * the global database, completed inputs (`inputs`) in an agent's.
   */
  retained?: Record<string, number>;
  /** With `--vacuum`: what giving its free space back did. */
  vacuum?: VacuumResult;
  /** Set when the database could not be opened or swept; the other databases still were. */
  error?: string;
  /** An agent's `PRAGMA quick_check`: "ok" or the problems found (recorded for `status`). */
  quickCheck?: string;
}

export interface GcOptions {
  /** Default: the home's policy. */
  retention?: RetentionPolicy;
  /** Also give free space back, switching older databases to incremental auto-vacuum. */
  vacuum?: boolean;
  /** Told a line of progress per database (the CLI prints them on stderr). */
  onProgress?: (line: string) => void;
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

function describeVacuum(name: string, v: VacuumResult): string {
  const mode = v.rewritten ? `${v.autoVacuumBefore} -> ${v.autoVacuum}, rewritten` : v.autoVacuum;
  return `vacuumed ${name} (${mode}): ${formatBytes(v.bytesBefore)} -> ${formatBytes(v.bytesAfter)} in ${v.ms} ms`;
}

/** One database's sweep: expired rows, rows past retention, then, when asked, its free space. */
function sweepOne(
  db: Database,
  name: string,
  now: number,
  retained: () => Record<string, number>,
  options: GcOptions,
): Omit<GcDatabaseReport, "agentId"> {
  const swept = { ...sweepExpired(db, now), retained: retained() };
  if (!options.vacuum) return swept;
  options.onProgress?.(`vacuuming ${name} (${formatBytes(db.sizeBytes())})`);
  const vacuum = vacuumDatabase(db);
  options.onProgress?.(describeVacuum(name, vacuum));
  return { ...swept, vacuum };
}

/**
 * Sweeps expired rows, and rows past the retention policy (default: the home's), from the global
 * database and from every registered agent's database; with `vacuum`, gives each one's free
 * space back right after its sweep.
 */
export function collectGarbage(
  home: StateHome,
  now: number = Date.now(),
  options: GcOptions = {},
): GcReport {
  const retention = options.retention ?? home.retention;
  const databases: GcDatabaseReport[] = [
    {
      agentId: null,
      ...sweepOne(
        home.db,
        "global",
        now,
        () => ({ delivery_queue_entries: pruneReceipts(home.db, retention, now) }),
        options,
      ),
    },
  ];
  for (const { agentId } of home.listAgents()) {
    let quickCheck: string | undefined;
    try {
      // Checked first: a database too damaged to sweep still has its damage recorded.
      quickCheck = quickCheckAgent(home, agentId, now).result;
      const swept = home.withAgent(
        agentId,
        ({ db }) =>
          sweepOne(db, agentId, now, () => ({ inputs: pruneInputs(db, retention, now) }), options),
        { create: false },
      );
      databases.push({ agentId, quickCheck, ...swept });
      // Opens no longer write the registry: gc keeps its sizes and last-seen times current.
      home.refreshAgentRecord(agentId);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      databases.push({ agentId, error: message, ...(quickCheck ? { quickCheck } : {}) });
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
  const removed = `${report.total} expired row${report.total === 1 ? "" : "s"} removed; ${retained}`;
  const vacuumed = report.databases.flatMap((db) =>
    db.vacuum ? [describeVacuum(db.agentId ?? "global", db.vacuum)] : [],
  );
  const damaged = report.databases.filter((db) => db.quickCheck && db.quickCheck !== "ok");
  const checks = damaged.map((db) => `quick_check ${db.agentId}: ${db.quickCheck}`);
  return [table, "", removed, ...vacuumed, ...checks].join("\n");
}

interface GcFlags extends HomeOptions, JsonOption {
  keepDays?: string;
  keepInputs?: string;
  keepReceipts?: string;
  vacuum?: boolean;
}

/** The retention policy of the flags given, over the defaults. */
function retentionOf(options: GcFlags): RetentionPolicy {
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
      "delete expired rows (TTL) from the global database and every agent database, and completed inputs and settled delivery receipts past retention; refresh each agent's recorded size and last-seen time; run PRAGMA quick_check on each agent database, one at a time, and record the result for `status`",
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
    )
    .option(
      "--vacuum",
      "then give each database's free space back to the filesystem; a database created by an older release is first switched to incremental auto-vacuum by rewriting it whole (one transaction, holding its write lock meanwhile: best with the gateway stopped). Progress per database on stderr",
    );
  addExamples(command, [
    "agentstate gc",
    "agentstate gc --vacuum",
    "agentstate gc --home ~/.agentstate --json",
    "agentstate gc --keep-days 7 --keep-inputs 200",
  ]);
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: GcFlags) => {
    const retention = retentionOf(options);
    const onProgress = (line: string) => process.stderr.write(`${line}\n`);
    const report = withHome(options, false, (home) =>
      collectGarbage(home, Date.now(), { retention, vacuum: options.vacuum === true, onProgress }),
    );
    if (options.json) printJson(report);
    else process.stdout.write(`${render(report)}\n`);
    if (report.databases.some((db) => db.error !== undefined)) process.exitCode = 1;
    if (report.databases.some((db) => db.quickCheck !== undefined && db.quickCheck !== "ok")) {
      process.exitCode = 4;
    }
  });
}
