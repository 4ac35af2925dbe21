import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
import { unknownRun } from "../stores/global/migration-ledger-rows.js";
import {
  fromRow,
  lineParams,
  listParams,
  type NewQuarantinedLine,
  type QuarantinedLine,
  type QuarantinedLineRow,
  type QuarantineListOptions,
} from "../stores/global/migration-quarantine-rows.js";
import { QUARANTINE_SQL } from "../stores/global/migration-quarantine-sql.js";
import type { ControlPlaneMigrationQuarantine } from "./control-plane-ledgers.js";
import { pgStatements, query } from "./pg-statements.js";

// An add is one insert that skips a line already kept: of hosts quarantining one line at once,
// exactly one is told it added it.
const SQL = pgStatements("quarantine", QUARANTINE_SQL);

/** Quarantined lines on PostgreSQL, bytes as BYTEA: `MigrationQuarantineStore`'s statements. */
export class PgMigrationQuarantine implements ControlPlaneMigrationQuarantine {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async add(entry: NewQuarantinedLine, now: number = this.clock()): Promise<boolean> {
    const params = lineParams(entry, now);
    try {
      return (await query(this.pool, SQL.insert, params)).length > 0;
    } catch (error) {
      throw unknownRun(error, params.runId);
    }
  }

  async list(options: QuarantineListOptions = {}): Promise<QuarantinedLine[]> {
    const { runId, limit } = listParams(options);
    const rows =
      runId === null
        ? await query<QuarantinedLineRow>(this.pool, SQL.all, { limit })
        : await query<QuarantinedLineRow>(this.pool, SQL.ofRun, { runId, limit });
    return rows.map(fromRow);
  }

  async countsByRun(): Promise<Map<string, number>> {
    const rows = await query<{ run_id: string; lines: number }>(this.pool, SQL.counts, {});
    return new Map(rows.map((row) => [row.run_id, row.lines]));
  }
}
