import { randomUUID } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkInteger,
  checkLimit,
  checkOptions,
  checkText,
  errorText,
} from "../checks.js";
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

export type { ClaimedDelivery, DeliveryEntry, NewDeliveryEntry } from "./delivery-queue-rows.js";

export interface DeliveryQueueOptions {
  clock?: Clock;
  /** How long a claim holds an entry before others may take it (default 60 s). */
  leaseMs?: number;
  /** Failed attempts after which an entry becomes a dead letter (default 5). */
  maxAttempts?: number;
  /** Delay before the first retry; doubles with every further failure (default 1 s). */
  backoffBaseMs?: number;
  /** Longest delay between retries (default 1 h). */
  backoffMaxMs?: number;
}

export interface FailOptions {
  /** Dead-letter now, without further retries (the error will not go away by waiting). */
  permanent?: boolean;
}

const STORE_OPTIONS = ["clock", "leaseMs", "maxAttempts", "backoffBaseMs", "backoffMaxMs"];

/**
 * Durable delivery queues (`delivery_queue_entries`), at-least-once: a worker `claim`s an entry,
 * which leases it for `leaseMs`; `ack` removes it; `fail` schedules a retry with exponential
 * backoff or, after `maxAttempts` failures, keeps it as a dead letter (`listFailed`, `retry`).
 * When a worker dies holding a lease, the entry becomes claimable again once the lease lapses.
 * Every operation is one atomic SQL statement (see `QUEUE_SQL`): two claimers never get the same
 * entry, and an `ack` or `fail` from a holder whose lease lapsed and was re-claimed is refused.
 */
export class DeliveryQueueStore {
  readonly options: Readonly<Required<Omit<DeliveryQueueOptions, "clock">>>;
  private readonly clock: Clock;
  private readonly insert: SqlStatement<DeliveryQueueRow>;
  private readonly claimOne: SqlStatement<DeliveryQueueRow>;
  private readonly deleteLeased: SqlStatement;
  private readonly failLeased: SqlStatement<DeliveryQueueRow>;
  private readonly extendLease: SqlStatement<DeliveryQueueRow>;
  private readonly selectOne: SqlStatement<DeliveryQueueRow>;
  private readonly failedPage: SqlStatement<DeliveryQueueRow>;
  private readonly requeue: SqlStatement<DeliveryQueueRow>;
  private readonly deleteOne: SqlStatement;
  private readonly countAll: SqlStatement<{ pending: number; leased: number; failed: number }>;

  constructor(db: Database, options: DeliveryQueueOptions = {}) {
    const checked = checkOptions(options, STORE_OPTIONS, "DeliveryQueueStore");
    this.clock = checked.clock ?? Date.now;
    this.options = queueSettings(checked);
    this.insert = db.prepare(QUEUE_SQL.insert);
    this.claimOne = db.prepare(QUEUE_SQL.claim);
    this.deleteLeased = db.prepare(QUEUE_SQL.ack);
    this.failLeased = db.prepare(QUEUE_SQL.fail);
    this.extendLease = db.prepare(QUEUE_SQL.extend);
    this.selectOne = db.prepare(QUEUE_SQL.select);
    this.failedPage = db.prepare(QUEUE_SQL.failedPage);
    this.requeue = db.prepare(QUEUE_SQL.retry);
    this.deleteOne = db.prepare(QUEUE_SQL.delete);
    this.countAll = db.prepare(QUEUE_SQL.counts);
  }

  /** Adds an entry to a queue, claimable from `availableAt` (default now). */
  enqueue(queue: string, entry: NewDeliveryEntry): DeliveryEntry {
    const params = enqueueParams(checkQueue(queue), entry, this.clock());
    const row = this.insert.get(params);
    if (!row) {
      throw new StateError(
        "E_CONFLICT",
        `delivery ${params.queue}/${params.id} is already queued`,
        {
          details: { queue: params.queue, id: params.id },
        },
      );
    }
    return entryFromRow(row);
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
    const row = this.claimOne.get({
      queue: checkQueue(queue),
      owner: checkText("lease owner", owner, 256),
      leaseId: randomUUID(),
      now,
      leaseUntil: now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now),
    });
    return row ? claimedFromRow(row) : undefined;
  }

  /** Delivered: removes the entry. E_CONFLICT when the lease was lost to another claimer. */
  ack(queue: string, id: string, leaseId: string): void {
    const params = this.leaseParams(queue, id, leaseId);
    if (this.deleteLeased.run(params).changes === 0) throw this.leaseLost(params);
  }

  /**
   * Not delivered: releases the lease and schedules a retry after
   * min(backoffMaxMs, backoffBaseMs × 2^(failures − 1)), or makes the entry a dead letter after
   * `maxAttempts` failures (or at once when `permanent`).
   */
  fail(
    queue: string,
    id: string,
    leaseId: string,
    error: string,
    options: FailOptions = {},
  ): DeliveryEntry {
    const { permanent = false } = checkOptions(options, ["permanent"], "DeliveryQueueStore.fail");
    const params = this.leaseParams(queue, id, leaseId);
    const row = this.failLeased.get({
      ...params,
      ...this.options,
      permanent: permanent === true ? 1 : 0,
      error: errorText(error),
      now: this.clock(),
    });
    if (!row) throw this.leaseLost(params);
    return entryFromRow(row);
  }

  /** Keeps holding an entry for `leaseMs` more from now; E_CONFLICT when the lease was lost. */
  extend(
    queue: string,
    id: string,
    leaseId: string,
    leaseMs: number = this.options.leaseMs,
  ): ClaimedDelivery {
    const params = this.leaseParams(queue, id, leaseId);
    const now = this.clock();
    const until = now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now);
    const row = this.extendLease.get({ ...params, leaseUntil: until, now });
    if (!row) throw this.leaseLost(params);
    return claimedFromRow(row);
  }

  get(queue: string, id: string): DeliveryEntry | undefined {
    const row = this.selectOne.get({
      queue: checkQueue(queue),
      id: checkText("delivery id", id, 256),
    });
    return row ? entryFromRow(row) : undefined;
  }

  /** Dead letters of a queue, oldest failure first; pass the last entry as `after` for the next page. */
  listFailed(
    queue: string,
    options: { limit?: number; after?: DeliveryEntry } = {},
  ): DeliveryEntry[] {
    const { limit, after } = checkOptions(
      options,
      ["limit", "after"],
      "DeliveryQueueStore.listFailed",
    );
    return this.failedPage
      .all({
        queue: checkQueue(queue),
        afterAt: after?.failedAt ?? -1,
        afterId: after?.id ?? "",
        limit: checkLimit(limit),
      })
      .map(entryFromRow);
  }

  /** Puts a dead letter back in line with a fresh attempt count. */
  retry(queue: string, id: string): DeliveryEntry | undefined {
    const row = this.requeue.get({
      queue: checkQueue(queue),
      id: checkText("delivery id", id, 256),
      now: this.clock(),
    });
    return row ? entryFromRow(row) : undefined;
  }

  delete(queue: string, id: string): boolean {
    return (
      this.deleteOne.run({ queue: checkQueue(queue), id: checkText("delivery id", id, 256) })
        .changes > 0
    );
  }

  /** How many entries are waiting (claimable now or later), leased, and dead-lettered. */
  counts(queue: string): { pending: number; leased: number; failed: number } {
    const row = this.countAll.get({ queue: checkQueue(queue), now: this.clock() });
    return { pending: row?.pending ?? 0, leased: row?.leased ?? 0, failed: row?.failed ?? 0 };
  }

  private leaseParams(queue: string, id: string, leaseId: string) {
    return {
      queue: checkQueue(queue),
      id: checkText("delivery id", id, 256),
      leaseId: checkText("lease id", leaseId, 256),
    };
  }

  private leaseLost(params: { queue: string; id: string; leaseId: string }): StateError {
    const current = this.selectOne.get(params);
    if (!current) {
      return new StateError("E_NOT_FOUND", `no delivery ${params.queue}/${params.id}`, {
        details: params,
      });
    }
    return new StateError(
      "E_CONFLICT",
      `delivery ${params.queue}/${params.id} is no longer leased with ${params.leaseId}: its lease lapsed and ${current.lease_owner ?? "nobody"} holds it now`,
      { details: { ...params, leaseOwner: current.lease_owner } },
    );
  }
}

function checkQueue(queue: unknown): string {
  return checkText("queue name", queue, 128);
}

function queueSettings(options: DeliveryQueueOptions) {
  const day = 86_400_000;
  return Object.freeze({
    leaseMs: checkInteger("leaseMs", options.leaseMs ?? 60_000, 1, 7 * day),
    maxAttempts: checkInteger("maxAttempts", options.maxAttempts ?? 5, 1, 1000),
    backoffBaseMs: checkInteger("backoffBaseMs", options.backoffBaseMs ?? 1000, 0, day),
    backoffMaxMs: checkInteger("backoffMaxMs", options.backoffMaxMs ?? 3_600_000, 0, 30 * day),
  });
}
