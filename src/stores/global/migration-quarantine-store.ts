import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import { unknownRun } from "./migration-ledger-rows.js";
import {
  fromRow,
  lineParams,
  listParams,
  type NewQuarantinedLine,
  type QuarantinedLine,
  type QuarantinedLineRow,
  type QuarantineListOptions,
} from "./migration-quarantine-rows.js";
import { QUARANTINE_SQL } from "./migration-quarantine-sql.js";

export {
  MIGRATION_QUARANTINE_COLUMNS,
  type NewQuarantinedLine,
  type QuarantinedLine,
  type QuarantineListOptions,
} from "./migration-quarantine-rows.js";

/**
 * `migration_quarantine` in the global database: the lines of legacy sources that could not be
 * imported, kept as BLOBs with where they came from and why, so that the source can be removed.
 */
export class MigrationQuarantineStore {
  private readonly clock: Clock;
  private readonly insert: SqlStatement;
  private readonly selectAll: SqlStatement<QuarantinedLineRow>;
  private readonly selectRun: SqlStatement<QuarantinedLineRow>;
  private readonly selectCounts: SqlStatement<{ run_id: string; lines: number }>;

  constructor(db: Database, options: { clock?: Clock } = {}) {
    this.clock = checkOptions(options, ["clock"], "MigrationQuarantineStore").clock ?? Date.now;
    this.insert = db.prepare(QUARANTINE_SQL.insert);
    this.selectAll = db.prepare(QUARANTINE_SQL.all);
    this.selectRun = db.prepare(QUARANTINE_SQL.ofRun);
    this.selectCounts = db.prepare(QUARANTINE_SQL.counts);
  }

  /**
   * Keeps a line; returns false when the same bytes of the same line of that path are already
   * kept (a rerun), so a line is never quarantined twice. E_CONSTRAINT when its run is not in
   * the ledger.
   */
  add(entry: NewQuarantinedLine, now: number = this.clock()): boolean {
    const params = lineParams(entry, now);
    try {
      return this.insert.get(params) !== undefined;
    } catch (error) {
      throw unknownRun(error, params.runId);
    }
  }

  /** Quarantined lines by path and line number; every run's, or one run's. */
  list(options: QuarantineListOptions = {}): QuarantinedLine[] {
    const { runId, limit } = listParams(options);
    const rows =
      runId === null ? this.selectAll.all({ limit }) : this.selectRun.all({ runId, limit });
    return rows.map(fromRow);
  }

  /** How many lines each migration run quarantined (runs that quarantined none are absent). */
  countsByRun(): Map<string, number> {
    return new Map(this.selectCounts.all().map((row) => [row.run_id, row.lines]));
  }
}
