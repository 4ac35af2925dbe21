import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";

/** Statements for limits a caller asked for lately: most ask for one limit, always the same. */
const LIMITS_KEPT = 4;

/**
 * A search statement per limit, the limit written into its SQL (an integer `search()` checked).
 * Bound as a parameter (`LIMIT ?`), a typical search at 200,000 events ran 60-100 µs slower just
 * after another connection's commit and 20-30 µs slower warm, on both engines, with the same
 * query plan: SQLite runs it slower when the limit is a bare parameter.
 */
export function withLimit<Row>(
  db: Database,
  sql: (limit: number) => string,
): (limit: number) => SqlStatement<Row> {
  const statements = new Map<number, SqlStatement<Row>>();
  return (limit) => {
    let statement = statements.get(limit);
    if (statement === undefined) {
      if (statements.size === LIMITS_KEPT) statements.clear();
      statement = db.prepareOnUse<Row>(sql(limit));
      statements.set(limit, statement);
    }
    return statement;
  };
}
