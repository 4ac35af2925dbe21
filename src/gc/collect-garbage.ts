import type { Database } from "../db/database.js";
import { type VacuumResult, vacuumDatabase } from "../db/vacuum.js";
import { formatBytes } from "../format-bytes.js";
import type { StateHome } from "../home.js";
import type { MaintenanceOptions, RunReport } from "../maintenance/run.js";
import { quickCheckAgent } from "../status/quick-check-canary.js";
import { type SweepReport, sweepExpired } from "../stores/global/expiry.js";
import { pruneInputs, pruneReceipts, type RetentionPolicy } from "../stores/retention.js";

export interface GcDatabaseReport extends Partial<SweepReport> {
  /** null for the global database. */
  agentId: string | null;
  /**
   * Rows past the retention policy, by table: settled deliveries (`delivery_queue_entries`) in
   * the global database, completed inputs (`inputs`) in an agent's.
   */
  retained?: Record<string, number>;
  /**
   * An agent's search rows nothing needs any more, dropped before any vacuum so their space is
   * free for it: rows of transcript_fts that moves to cold storage left behind (their copies are
   * in the cold index), and rows of the cold index no claim covers (a deleted session's, a failed
   * move's).
   */
  coldIndexRows?: number;
  /** With `--vacuum`: what giving its free space back did. */
  vacuum?: VacuumResult;
  /** With `--vacuum`, for an agent with a cold index file: the same for that file. */
  coldIndexVacuum?: VacuumResult;
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
  /**
   * Apply the home's maintenance policy first (`home.maintenance.run`), with these overrides:
   * first, so that it does exactly what a plan made just before says.
   */
  maintenance?: Pick<MaintenanceOptions, "overrides">;
}

export interface GcReport {
  home: string;
  sweptAt: number;
  databases: GcDatabaseReport[];
  /** Expired rows removed. */
  total: number;
  /** Rows removed by the retention policy. */
  retainedTotal: number;
  /** With `maintenance`: what the home's maintenance policy moved and pruned, first. */
  maintenance?: RunReport;
}

export function describeVacuum(name: string, v: VacuumResult): string {
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
  const maintenance =
    options.maintenance === undefined
      ? undefined
      : home.maintenance.run({
          ...options.maintenance,
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        });
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
        ({ db, cold }) => {
          const coldIndexRows = cold.purgeIndex();
          const retained = () => ({ inputs: pruneInputs(db, retention, now) });
          const swept = { coldIndexRows, ...sweepOne(db, agentId, now, retained, options) };
          const coldIndexVacuum = options.vacuum ? cold.index.vacuum() : undefined;
          if (coldIndexVacuum === undefined) return swept;
          options.onProgress?.(describeVacuum(`${agentId} cold index`, coldIndexVacuum));
          return { ...swept, coldIndexVacuum };
        },
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
  return {
    home: home.path,
    sweptAt: now,
    databases,
    total,
    retainedTotal,
    ...(maintenance ? { maintenance } : {}),
  };
}
