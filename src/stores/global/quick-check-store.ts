import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";

/** An agent database's last background `PRAGMA quick_check`. */
export interface QuickCheckRecord {
  agentId: string;
  /** `"ok"`, or the problems found, joined with "; ". */
  result: string;
  /** When it ran (Unix ms). */
  checkedAt: number;
}

interface QuickCheckRow {
  agent_id: string;
  quick_check: string;
  quick_checked_at: number;
}

/** The quick_check columns of `agent_databases`: written by the canary, read by `status`. */
export class QuickCheckStore {
  private readonly update: SqlStatement;
  private readonly selectAll: SqlStatement<QuickCheckRow>;

  constructor(db: Database) {
    this.update = db.prepare(
      "UPDATE agent_databases SET quick_check = ?, quick_checked_at = ? WHERE agent_id = ?",
    );
    this.selectAll = db.prepare(
      `SELECT agent_id, quick_check, quick_checked_at FROM agent_databases
       WHERE quick_checked_at IS NOT NULL ORDER BY agent_id`,
    );
  }

  /** Records a check of a registered agent; false when the agent has no registry row. */
  record(agentId: string, result: string, checkedAt: number): boolean {
    return this.update.run(result, checkedAt, agentId).changes === 1;
  }

  /** Every agent checked at least once, by id. */
  list(): QuickCheckRecord[] {
    return this.selectAll.all().map((row) => ({
      agentId: row.agent_id,
      result: row.quick_check,
      checkedAt: row.quick_checked_at,
    }));
  }
}
