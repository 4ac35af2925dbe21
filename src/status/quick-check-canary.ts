import { isStateError } from "../db/errors.js";
import type { StateHome } from "../home.js";
import type { QuickCheckRecord } from "../stores/global/quick-check-store.js";

/** Errors that are themselves the check's answer: the file is damaged, not busy or missing. */
const DAMAGE_CODES = ["E_CORRUPT", "E_NOT_A_DATABASE", "E_DAMAGED"] as const;

/**
 * Runs `PRAGMA quick_check` on one agent database and records the answer in its registry row, for
 * `status` to report. Never on the open path (an open stays cheap): `agentstate gc` runs it, one
 * agent at a time. A database too damaged to open records why.
 */
export function quickCheckAgent(
  home: StateHome,
  agentId: string,
  now: number = Date.now(),
): QuickCheckRecord {
  let result: string;
  try {
    result = home.withAgent(agentId, ({ db }) => db.quickCheck().join("; "), { create: false });
  } catch (error) {
    if (!DAMAGE_CODES.some((code) => isStateError(error, code))) throw error;
    result = (error as Error).message;
  }
  home.quickChecks.record(agentId, result, now);
  return { agentId, result, checkedAt: now };
}
