import type { Database } from "../db/database.js";
import { checkInteger, checkOptions } from "./checks.js";
import { pruneReceiptsSql } from "./global/delivery-queue-sql.js";

const PRUNE_RECEIPTS = pruneReceiptsSql("rowid");

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * How long finished work is kept. Completed inputs answer retried deliveries of the same message,
 * settled receipts answer re-run turns that queue their reply again: both are only asked about for
 * a while, so they go by age and, to bound a busy session or queue, by count.
 */
export interface RetentionOptions {
  /** Completed inputs are kept this long after they completed (ms; default 30 days). */
  inputsMaxAgeMs?: number;
  /** At most this many completed inputs per session key, the latest (default 1,000). */
  inputsPerSession?: number;
  /** Sent and failed deliveries are kept this long after they settled (ms; default 30 days). */
  receiptsMaxAgeMs?: number;
  /** At most this many sent and failed deliveries per queue, the latest (default 100,000). */
  receiptsPerQueue?: number;
}

export type RetentionPolicy = Readonly<Required<RetentionOptions>>;

export const DEFAULT_RETENTION: RetentionPolicy = Object.freeze({
  inputsMaxAgeMs: 30 * DAY_MS,
  inputsPerSession: 1_000,
  receiptsMaxAgeMs: 30 * DAY_MS,
  receiptsPerQueue: 100_000,
});

const KEYS = Object.keys(DEFAULT_RETENTION);

/** The policy of `options` over the defaults, checked by name and frozen. */
export function checkRetention(options: RetentionOptions = {}): RetentionPolicy {
  const given = checkOptions(options, KEYS, "retention");
  const policy = { ...DEFAULT_RETENTION, ...given };
  for (const key of KEYS as (keyof RetentionPolicy)[]) {
    checkInteger(`retention.${key}`, policy[key], 0, Number.MAX_SAFE_INTEGER);
  }
  return Object.freeze(policy);
}

/**
 * Completed inputs past the policy's age or beyond its count per session key. The newest input of
 * the agent always stays, whatever its state: `arrival_seq` is the rowid, and SQLite would hand a
 * deleted largest rowid to the next input, which would then sort before inputs already seen by a
 * reader paging with `afterSeq`. Inputs not completed are never deleted.
 */
const PRUNE_INPUTS = `DELETE FROM inputs WHERE state = 'completed'
    AND arrival_seq < (SELECT max(arrival_seq) FROM inputs)
    AND (completed_at <= @before OR arrival_seq IN (
      SELECT arrival_seq FROM (
        SELECT arrival_seq,
          row_number() OVER (PARTITION BY session_key ORDER BY arrival_seq DESC) AS newer
        FROM inputs WHERE state = 'completed')
      WHERE newer > @keep))`;

/** Completed inputs removed from an agent database by `policy` at `now`. */
export function pruneInputs(db: Database, policy: RetentionPolicy, now: number): number {
  return db
    .prepare(PRUNE_INPUTS)
    .run({ before: now - policy.inputsMaxAgeMs, keep: policy.inputsPerSession }).changes;
}

/** Settled deliveries (receipts) removed from the global database by `policy` at `now`. */
export function pruneReceipts(db: Database, policy: RetentionPolicy, now: number): number {
  return db
    .prepare(PRUNE_RECEIPTS)
    .run({ before: now - policy.receiptsMaxAgeMs, keep: policy.receiptsPerQueue }).changes;
}
