import { randomUUID } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { type Clock, checkInteger, checkOptions, checkText, errorText } from "../checks.js";
import { type LeaseParams, leaseLostError, notUnknownError } from "./delivery-queue-errors.js";
import {
  type DeliveryQueueOptions,
  type FailOptions,
  type PageOptions,
  queueSettings,
  STORE_OPTIONS,
} from "./delivery-queue-options.js";
import {
  type ClaimedDelivery,
  claimedFromRow,
  type DeliveryEntry,
  type DeliveryQueueRow,
  enqueueParams,
  entryFromRow,
  type NewDeliveryEntry,
} from "./delivery-queue-rows.js";
import { QUEUE_SQL } from "./delivery-queue-sql.js";
import {
  checkDeliveryId,
  checkQueue,
  checkSettleOptions,
  checkUnknownPolicy,
  emptyReconcileReport,
  leaseParams,
  type PageStatement,
  pageParams,
  policyAnswer,
  receiptParams,
  recordPolicyOutcome,
  resolveParams,
  settleValues,
  unknownEverywhereParams,
} from "./delivery-receipt-params.js";
import type {
  ReceiptQuery,
  ReconcileReport,
  SettleOptions,
  UnknownDecision,
  UnknownPolicy,
} from "./delivery-receipts.js";

export type { DeliveryQueueOptions, FailOptions, PageOptions } from "./delivery-queue-options.js";
export type {
  ClaimedDelivery,
  DeliveryEntry,
  DeliveryStatus,
  NewDeliveryEntry,
} from "./delivery-queue-rows.js";
export type {
  ReceiptQuery,
  ReconcileReport,
  SettleOptions,
  UnknownDecision,
  UnknownPolicy,
} from "./delivery-receipts.js";

type Statements = { readonly [K in keyof typeof QUEUE_SQL]: SqlStatement<DeliveryQueueRow> };

/**
 * Durable delivery queues (`delivery_queue_entries`) with receipts. A worker `claim`s an entry,
 * which leases it for `leaseMs`; records `beginSend` before the platform call; then `settle`s it
 * (kept as a `sent` receipt) or `fail`s it, which schedules a retry with exponential backoff or,
 * after `maxAttempts` failures, keeps it as a dead letter (`listFailed`, `retry`).
 * When a worker dies holding a lease before `beginSend`, the entry becomes claimable again once the
 * lease lapses; when it dies after, the entry is `unknown` (maybe sent) and waits for the
 * gateway's `resolveUnknown` or `reconcileUnknown`. Every operation is one atomic SQL statement
 * (see `QUEUE_SQL`): two claimers never get the same entry, and a call from a holder whose lease
 * lapsed and was re-claimed is refused.
 */
export class DeliveryQueueStore {
  readonly options: Readonly<Required<Omit<DeliveryQueueOptions, "clock" | "onUnknown">>>;
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly onUnknown: UnknownPolicy | undefined;
  private readonly sql: Statements;
  private readonly countAll: SqlStatement<{ pending: number; leased: number; failed: number }>;

  constructor(db: Database, options: DeliveryQueueOptions = {}) {
    const checked = checkOptions(options, STORE_OPTIONS, "DeliveryQueueStore");
    this.db = db;
    this.clock = checked.clock ?? Date.now;
    this.onUnknown = checkUnknownPolicy(checked.onUnknown);
    this.options = queueSettings(checked);
    const prepared: Record<string, SqlStatement<DeliveryQueueRow>> = {};
    for (const [name, text] of Object.entries(QUEUE_SQL)) prepared[name] = db.prepare(text);
    this.sql = prepared as Statements;
    this.countAll = db.prepare(QUEUE_SQL.counts);
  }

  /**
   * Adds an entry to a queue, claimable from `availableAt` (default now). With an
   * `idempotencyKey` already in the queue, returns that entry (in whatever state it is) instead.
   */
  enqueue(queue: string, entry: NewDeliveryEntry): DeliveryEntry {
    const now = this.clock();
    const params = enqueueParams(checkQueue(queue), entry, now);
    const row =
      this.sql.insert.get(params) ??
      (params.idempotencyKey === null ? undefined : this.sql.byIdempotencyKey.get(params));
    if (!row) {
      throw new StateError(
        "E_CONFLICT",
        `delivery ${params.queue}/${params.id} is already queued`,
        {
          details: { queue: params.queue, id: params.id },
        },
      );
    }
    return entryFromRow(row, now);
  }

  /**
   * Leases the oldest claimable entry of `queue` to `owner` (a worker name, for inspection) for
   * `leaseMs`, or returns undefined when none is due.
   */
  claim(
    queue: string,
    owner: string,
    options: { leaseMs?: number } = {},
  ): ClaimedDelivery | undefined {
    const { leaseMs = this.options.leaseMs } = checkOptions(
      options,
      ["leaseMs"],
      "DeliveryQueueStore.claim",
    );
    const now = this.clock();
    const row = this.sql.claim.get({
      queue: checkQueue(queue),
      owner: checkText("lease owner", owner, 256),
      leaseId: randomUUID(),
      now,
      leaseUntil: now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now),
    });
    return row ? claimedFromRow(row, now) : undefined;
  }

  /**
   * Records that the platform call is about to start; call it, and let it return, before calling
   * the platform. From then on a lapse of the lease makes the entry `unknown` instead of
   * claimable. E_CONFLICT when the lease lapsed or was lost, or the send was already begun.
   */
  beginSend(queue: string, id: string, leaseId: string): ClaimedDelivery {
    if (this.db.inTransaction) {
      // Inside a transaction the record would not be durable when the platform call starts.
      throw new TypeError(
        "Expected beginSend outside a transaction: it must commit before the send",
      );
    }
    const params = leaseParams(queue, id, leaseId);
    const now = this.clock();
    const row = this.sql.beginSend.get({ ...params, now });
    if (!row) throw this.leaseLost(params, now);
    return claimedFromRow(row, now);
  }

  /**
   * Delivered: settles the entry as `sent` and keeps it as a receipt. E_CONFLICT when the lease
   * was lost to another claimer or the entry was already settled.
   */
  settle(queue: string, id: string, leaseId: string, options: SettleOptions = {}): DeliveryEntry {
    const checked = checkSettleOptions(options);
    const params = leaseParams(queue, id, leaseId);
    const now = this.clock();
    const row = this.sql.ack.get({ ...params, now, ...settleValues(checked) });
    if (!row) throw this.leaseLost(params, now);
    return entryFromRow(row, now);
  }

  /**
   * `settle` without a platform message id. The entry is kept as a `sent` receipt (it used to be
   * deleted) so that its idempotency key keeps a re-run turn from queueing the reply again.
   */
  ack(queue: string, id: string, leaseId: string): void {
    const params = leaseParams(queue, id, leaseId);
    const now = this.clock();
    // run(), not settle(): the caller wants no entry back, so its payload is not decoded.
    if (this.sql.ack.run({ ...params, now, platformMessageId: null }).changes === 0) {
      throw this.leaseLost(params, now);
    }
  }

  /**
   * Not delivered: releases the lease and schedules a retry after
   * min(backoffMaxMs, backoffBaseMs × 2^(failures − 1)), or makes the entry a dead letter after
   * `maxAttempts` failures (or at once when `permanent`). After `beginSend` this is an ordinary
   * failure too: the platform said no.
   */
  fail(
    queue: string,
    id: string,
    leaseId: string,
    error: string,
    options: FailOptions = {},
  ): DeliveryEntry {
    const { permanent = false } = checkOptions(options, ["permanent"], "DeliveryQueueStore.fail");
    const params = leaseParams(queue, id, leaseId);
    const now = this.clock();
    const row = this.sql.fail.get({
      ...params,
      ...this.options,
      permanent: permanent === true ? 1 : 0,
      error: errorText(error),
      now,
    });
    if (!row) throw this.leaseLost(params, now);
    return entryFromRow(row, now);
  }

  /**
   * Keeps holding an entry for `leaseMs` more from now; E_CONFLICT when the lease was lost, or
   * lapsed during a send (the entry is `unknown` then).
   */
  extend(
    queue: string,
    id: string,
    leaseId: string,
    leaseMs: number = this.options.leaseMs,
  ): ClaimedDelivery {
    const params = leaseParams(queue, id, leaseId);
    const now = this.clock();
    const until = now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now);
    const row = this.sql.extend.get({ ...params, leaseUntil: until, now });
    if (!row) throw this.leaseLost(params, now);
    return claimedFromRow(row, now);
  }

  get(queue: string, id: string): DeliveryEntry | undefined {
    const now = this.clock();
    const row = this.sql.select.get({
      queue: checkQueue(queue),
      id: checkDeliveryId(id),
    });
    return row ? entryFromRow(row, now) : undefined;
  }

  /** Dead letters of a queue, oldest failure first; pass the last entry as `after` for the next page. */
  listFailed(queue: string, options: PageOptions = {}): DeliveryEntry[] {
    return this.page("failedPage", "listFailed", queue, options, (e) => e.failedAt);
  }

  /** Puts a dead letter back in line with a fresh attempt count. */
  retry(queue: string, id: string): DeliveryEntry | undefined {
    const now = this.clock();
    const row = this.sql.retry.get({
      queue: checkQueue(queue),
      id: checkDeliveryId(id),
      now,
    });
    return row ? entryFromRow(row, now) : undefined;
  }

  /**
   * Sends begun whose holder lost its lease before settling them: maybe delivered. Oldest send
   * first; pass the last entry as `after` for the next page.
   */
  listUnknown(queue: string, options: PageOptions = {}): DeliveryEntry[] {
    return this.page("unknownPage", "listUnknown", queue, options, (e) => e.sendStartedAt);
  }

  /** A page of a queue's entries in (time, id) order, after the `after` entry's. */
  private page(
    statement: PageStatement,
    method: string,
    queue: string,
    options: PageOptions,
    timeOf: (entry: DeliveryEntry) => number | null,
  ): DeliveryEntry[] {
    const now = this.clock();
    return this.sql[statement]
      .all(pageParams(method, queue, options, timeOf, now))
      .map((row) => entryFromRow(row, now));
  }

  /** `listUnknown` over every queue, oldest send first: what an operator checks after a crash. */
  listUnknownEverywhere(options: { limit?: number } = {}): DeliveryEntry[] {
    const now = this.clock();
    return this.sql.unknownAnywhere
      .all(unknownEverywhereParams(options, now))
      .map((row) => entryFromRow(row, now));
  }

  /**
   * The gateway's decision about a send of unknown outcome (see `UnknownDecision`). E_NOT_FOUND
   * when there is no such entry, E_CONFLICT when its outcome is not unknown (any more).
   */
  resolveUnknown(queue: string, id: string, decision: UnknownDecision): DeliveryEntry {
    const now = this.clock();
    const { key, statement, params } = resolveParams(queue, id, decision, now);
    const row = this.sql[statement].get(params);
    if (row) return entryFromRow(row, now);
    throw notUnknownError(key, this.sql.select.get(key), now);
  }

  /**
   * Records every lapsed send of `queue` as `unknown`, then applies the `onUnknown` policy to each
   * unknown entry (default: keep them all for the gateway to decide). Call it at start-up.
   */
  reconcileUnknown(queue: string): ReconcileReport {
    const name = checkQueue(queue);
    this.sql.markUnknown.run({ queue: name, now: this.clock() });
    const report = emptyReconcileReport();
    let page = this.listUnknown(name, { limit: 1000 });
    while (page.length > 0) {
      for (const entry of page) this.applyPolicy(entry, report);
      page = this.listUnknown(name, { limit: 1000, after: page[page.length - 1] });
    }
    return report;
  }

  /** Receipts of one conversation, session or agent (at least one is required), newest first. */
  receipts(query: ReceiptQuery): DeliveryEntry[] {
    const now = this.clock();
    const { statement, params } = receiptParams(query, now);
    return this.sql[statement].all(params).map((row) => entryFromRow(row, now));
  }

  delete(queue: string, id: string): boolean {
    return this.sql.delete.run({ queue: checkQueue(queue), id: checkDeliveryId(id) }).changes > 0;
  }

  /** How many entries are waiting (claimable now or later), leased, and dead-lettered. */
  counts(queue: string): { pending: number; leased: number; failed: number } {
    const row = this.countAll.get({ queue: checkQueue(queue), now: this.clock() });
    return { pending: row?.pending ?? 0, leased: row?.leased ?? 0, failed: row?.failed ?? 0 };
  }

  private applyPolicy(entry: DeliveryEntry, report: ReconcileReport): void {
    const answer = policyAnswer(this.onUnknown, entry);
    try {
      if (answer !== "keep") this.resolveUnknown(entry.queue, entry.id, answer);
    } catch (error) {
      recordPolicyOutcome(report, entry.id, answer, error);
      return;
    }
    recordPolicyOutcome(report, entry.id, answer);
  }

  private leaseLost(params: LeaseParams, now: number): StateError {
    return leaseLostError(params, this.sql.select.get(params), now);
  }
}
