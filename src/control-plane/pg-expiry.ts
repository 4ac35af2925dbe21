import type { Pool } from "pg";
import { checkTime } from "../stores/checks.js";
import type { SweepReport } from "../stores/global/expiry.js";
import { pgStatement, query } from "./pg-statements.js";

const EXPIRING_TABLES = pgStatement(
  "expiry_tables",
  `SELECT table_name FROM information_schema.columns
   WHERE table_schema = current_schema() AND column_name = 'expires_at' ORDER BY table_name`,
);

/**
 * `sweepExpired` on PostgreSQL: every table of the control plane's schema with an `expires_at`
 * column, found from the catalog (as the SQLite sweep finds them from its schema), so a table a
 * later migration adds is swept without a code change. One DELETE per table, each its own
 * statement and transaction, through the table's partial expiry index.
 */
export async function pgSweepExpired(pool: Pool, now: number): Promise<SweepReport> {
  const at = checkTime("now", now);
  const expiring = await query<{ table_name: string }>(pool, EXPIRING_TABLES, {});
  const tables: Record<string, number> = {};
  let total = 0;
  for (const { table_name: table } of expiring) {
    const quoted = `"${table.replaceAll('"', '""')}"`;
    const sweep = pgStatement(
      `expiry_${table}`,
      `WITH gone AS (DELETE FROM ${quoted} WHERE expires_at <= @at RETURNING 1)
       SELECT count(*) AS n FROM gone`,
    );
    const [row] = await query<{ n: number }>(pool, sweep, { at });
    tables[table] = row?.n ?? 0;
    total += row?.n ?? 0;
  }
  return { tables, total };
}
