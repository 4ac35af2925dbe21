import type { Database } from "../../db/database.js";
import { checkTime } from "../checks.js";

export interface SweepReport {
  /** Rows deleted, by table (every table with an `expires_at` column, 0 included). */
  tables: Record<string, number>;
  total: number;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Tables of a database that have an `expires_at` column, by name. */
export function expiringTables(db: Database): string[] {
  return db
    .prepare<{ name: string }>(
      `SELECT m.name FROM sqlite_schema AS m JOIN pragma_table_info(m.name) AS c
       WHERE m.type = 'table' AND c.name = 'expires_at' ORDER BY m.name`,
    )
    .all()
    .map((row) => row.name);
}

/**
 * Deletes every row whose `expires_at` is at or before `now`, in every table that has the column —
 * found from the schema, so a table added by a later migration is swept without a code change.
 * Works on the global database and on agent databases alike. Each table is one DELETE through its
 * expiry index, in its own short transaction, so readers and writers wait for one table at most.
 * The statements are prepared per call, not once: a sweep is rare and its table list can change.
 */
export function sweepExpired(db: Database, now: number = Date.now()): SweepReport {
  const at = checkTime("now", now);
  const tables: Record<string, number> = {};
  let total = 0;
  for (const table of expiringTables(db)) {
    const { changes } = db
      .prepare(`DELETE FROM ${quoteIdent(table)} WHERE expires_at <= ?`)
      .run(at);
    tables[table] = changes;
    total += changes;
  }
  return { tables, total };
}
