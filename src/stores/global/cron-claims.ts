import { randomUUID } from "node:crypto";
import { StateError } from "../../db/errors.js";
import { checkInteger, checkLimit, checkOptions, checkText } from "../checks.js";
import type { CronJobRow } from "./cron-rows.js";

export interface CronClaimOptions {
  /** How long the claimer has to record the run before another claimer may take the job over. */
  leaseMs: number;
  /** At most this many jobs (default 100). */
  limit?: number;
}

export interface CronRecordOptions {
  /** The claim the run was made under: E_CONFLICT once another claimer took the job over. */
  claimId?: string;
}

/** The parameters of `cronClaimSql`: a fresh claim id for this call, checked options. */
export function claimParams(owner: string, options: CronClaimOptions, now: number) {
  const { leaseMs, limit } = checkOptions(options, ["leaseMs", "limit"], "cron.claimDue");
  return {
    owner: checkText("claim owner", owner, 256),
    claimId: randomUUID(),
    now,
    claimUntil: now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now),
    limit: checkLimit(limit),
  };
}

export function checkRecordOptions(options: CronRecordOptions): string | undefined {
  const { claimId } = checkOptions(options, ["claimId"], "cron.recordRun");
  return claimId === undefined ? undefined : checkText("claim id", claimId, 256);
}

/**
 * E_CONFLICT unless the job is still under `claimId`. A claim that lapsed while nobody took the
 * job over still holds: only another claimer (or a run recorded already) ends it.
 */
export function checkClaimHeld(row: CronJobRow, claimId: string | undefined): void {
  if (claimId === undefined || row.claim_id === claimId) return;
  const why =
    row.claim_id === null
      ? "its claim was settled already"
      : `its claim lapsed and ${row.claim_owner} holds it now`;
  throw new StateError("E_CONFLICT", `cron job ${row.job_id}: claim ${claimId} lost; ${why}`, {
    details: { jobId: row.job_id, claimId, owner: row.claim_owner },
  });
}
