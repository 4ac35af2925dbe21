import { existsSync } from "node:fs";
import { join } from "node:path";
import { type InterruptedRun, settleInterruptedBackups } from "../backup/interrupted-runs.js";
import { processOwnerAlive } from "../db/process-owner.js";
import { GLOBAL_DB_RELATIVE_PATH, openStateHome, type StateHome } from "../home.js";

/**
 * Marks every `running` migration run whose process is gone as `interrupted`, and settles killed
 * backup runs too (`doctor --fix` starts with one). A killed run leaves no other debris: each
 * group of sources commits whole, and a source is removed only after its rows and ledger row did.
 */
export function settleInterruptedRuns(home: StateHome): InterruptedRun[] {
  const found: InterruptedRun[] = [];
  for (const run of home.migrations.runningRuns()) {
    if (run.owner === null || processOwnerAlive(run.owner)) continue;
    const note = `process ${run.owner.pid} ended before the run did`;
    home.migrations.finishRun(run.id, "interrupted", { ...run.report, interrupted: note });
    found.push({ kind: "migration", id: run.id, pid: run.owner.pid, removed: 0 });
  }
  return [...found, ...settleInterruptedBackups(home)];
}

/** The same for a home given by path; a home without a global database has no runs. */
export function settleInterruptedRunsAt(homePath: string): InterruptedRun[] {
  if (!existsSync(join(homePath, GLOBAL_DB_RELATIVE_PATH))) return [];
  const home = openStateHome({ home: homePath, create: false });
  try {
    return settleInterruptedRuns(home);
  } finally {
    home.close();
  }
}
