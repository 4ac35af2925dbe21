import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import { StateError } from "../db/errors.js";
import { type Clock, checkInteger, checkOptions, checkText, errorText } from "../stores/checks.js";
import { checkFence, type LeaseFence } from "../stores/global/agent-lease-rows.js";
import { leaseLostError } from "../stores/global/delivery-queue-errors.js";
import { type PageOptions, queueSettings } from "../stores/global/delivery-queue-options.js";
import {
  type ClaimedDelivery,
  claimedFromRow,
  type DeliveryEntry,
  type DeliveryQueueRow,
  enqueueParams,
  entryFromRow,
  type NewDeliveryEntry,
} from "../stores/global/delivery-queue-rows.js";
import { QUEUE_SQL } from "../stores/global/delivery-queue-sql.js";
import {
  checkQueue,
  checkSettleOptions,
  checkUnknownPolicy,
  leaseParams,
  settleValues,
} from "../stores/global/delivery-receipt-params.js";
import type {
  ReceiptQuery,
  SettleOptions,
  UnknownDecision,
  UnknownPolicy,
} from "../stores/global/delivery-receipts.js";
import type { RetentionOptions } from "../stores/retention.js";
import type {
  ControlPlaneQueue,
  ControlPlaneQueueOptions,
  EnqueueOptions,
  QueueCounts,
} from "./control-plane.js";
import { PgDeadLetters } from "./pg-dead-letters.js";
import { fenceParams } from "./pg-fence.js";
import { PG_QUEUE_SQL, QUEUE_NAMES_SQL } from "./pg-queue-sql.js";
import { PgReceipts } from "./pg-receipts.js";
import { type PgStatement, pgStatement, pgStatements, query } from "./pg-statements.js";
import type { WorkSignal } from "./work-signal.js";

const SQL = pgStatements("queue", PG_QUEUE_SQL);
const RECEIPT_SQL = pgStatements("queue", { beginSend: QUEUE_SQL.beginSend });
const QUEUE_NAMES = pgStatement("queue_names", QUEUE_NAMES_SQL);

/**
 * The delivery queue on PostgreSQL: each call is one statement on a pooled connection (a refusal
 * reads the entry afterwards only to say why). Unknown sends and receipts are `PgReceipts`', dead
 * letters `PgDeadLetters`'.
 */
export class PgQueue implements ControlPlaneQueue {
  private readonly settings: ReturnType<typeof queueSettings>;
  private readonly receiptsOf: PgReceipts;
  private readonly deadLetters: PgDeadLetters;

  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly signal: WorkSignal,
    private readonly listening: () => Promise<void>,
    settings: ControlPlaneQueueOptions,
    private readonly fenceLost: (fence: LeaseFence) => Promise<StateError | undefined>,
  ) {
    this.settings = queueSettings(settings);
    const onUnknown: UnknownPolicy | undefined = checkUnknownPolicy(settings.onUnknown);
    this.receiptsOf = new PgReceipts(pool, clock, onUnknown);
    this.deadLetters = new PgDeadLetters(pool, clock);
  }

  async enqueue(queue: string, entry: NewDeliveryEntry, options: EnqueueOptions = {}) {
    const { fence } = checkOptions(options, ["fence"], "queue.enqueue");
    const now = this.clock();
    const params = enqueueParams(checkQueue(queue), entry, now);
    const checked = fence === undefined ? undefined : checkFence(fence);
    const rows = checked
      ? await query<DeliveryQueueRow>(this.pool, SQL.fencedInsert, {
          ...params,
          ...fenceParams(checked),
        })
      : await query<DeliveryQueueRow>(this.pool, SQL.insert, params);
    const row = rows[0] ?? (await this.existing(params, checked));
    return entryFromRow(row, now);
  }

  /** Nothing was added: the fence failed, the idempotency key is queued, or the id is taken. */
  private async existing(
    params: { queue: string; id: string; idempotencyKey: string | null },
    fence: LeaseFence | undefined,
  ): Promise<DeliveryQueueRow> {
    if (fence) {
      const lost = await this.fenceLost(fence);
      if (lost) throw lost;
    }
    if (params.idempotencyKey !== null) {
      const [row] = await query<DeliveryQueueRow>(this.pool, SQL.byIdempotencyKey, params);
      if (row) return row;
    }
    throw new StateError("E_CONFLICT", `delivery ${params.queue}/${params.id} is already queued`, {
      details: { queue: params.queue, id: params.id },
    });
  }

  async claim(queue: string, owner: string, options: { leaseMs?: number } = {}) {
    const { leaseMs = this.settings.leaseMs } = checkOptions(options, ["leaseMs"], "queue.claim");
    const now = this.clock();
    const [row] = await query<DeliveryQueueRow>(this.pool, SQL.claim, {
      queue: checkQueue(queue),
      owner: checkText("lease owner", owner, 256),
      leaseId: randomUUID(),
      now,
      leaseUntil: now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now),
    });
    return row ? claimedFromRow(row, now) : undefined;
  }

  async ack(queue: string, id: string, leaseId: string): Promise<void> {
    await this.underLease(SQL.ack, queue, id, leaseId, () => ({ platformMessageId: null }));
  }

  async beginSend(queue: string, id: string, leaseId: string): Promise<ClaimedDelivery> {
    const { row, now } = await this.underLease(RECEIPT_SQL.beginSend, queue, id, leaseId);
    return claimedFromRow(row, now);
  }

  async settle(queue: string, id: string, leaseId: string, options: SettleOptions = {}) {
    const checked = checkSettleOptions(options);
    const { row, now } = await this.underLease(SQL.ack, queue, id, leaseId, () =>
      settleValues(checked),
    );
    return entryFromRow(row, now);
  }

  async fail(queue: string, id: string, leaseId: string, error: string, options = {}) {
    const { permanent = false } = checkOptions(options, ["permanent"], "queue.fail") as {
      permanent?: boolean;
    };
    const { row, now } = await this.underLease(SQL.fail, queue, id, leaseId, () => ({
      ...this.settings,
      permanent: permanent === true,
      error: errorText(error),
    }));
    return entryFromRow(row, now);
  }

  async extend(queue: string, id: string, leaseId: string, leaseMs = this.settings.leaseMs) {
    const now = this.clock();
    const until = now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now);
    const values = () => ({ leaseUntil: until });
    const { row } = await this.underLease(SQL.extend, queue, id, leaseId, values, now);
    return claimedFromRow(row, now);
  }

  /** Runs a statement that changes an entry only under `leaseId`; E_CONFLICT/E_NOT_FOUND else. */
  private async underLease(
    statement: PgStatement,
    queue: string,
    id: string,
    leaseId: string,
    values: () => Record<string, unknown> = () => ({}),
    now = this.clock(),
  ): Promise<{ row: DeliveryQueueRow; now: number }> {
    const params = leaseParams(queue, id, leaseId);
    const [row] = await query<DeliveryQueueRow>(this.pool, statement, {
      ...params,
      ...values(),
      now,
    });
    if (row) return { row, now };
    const [current] = await query<DeliveryQueueRow>(this.pool, SQL.select, params);
    throw leaseLostError(params, current, now);
  }

  async get(queue: string, id: string): Promise<DeliveryEntry | undefined> {
    const now = this.clock();
    const [row] = await query<DeliveryQueueRow>(this.pool, SQL.select, {
      queue: checkQueue(queue),
      id: checkText("delivery id", id, 256),
    });
    return row ? entryFromRow(row, now) : undefined;
  }

  async counts(queue: string): Promise<QueueCounts> {
    const [row] = await query<QueueCounts>(this.pool, SQL.counts, {
      queue: checkQueue(queue),
      now: this.clock(),
    });
    return { pending: row?.pending ?? 0, leased: row?.leased ?? 0, failed: row?.failed ?? 0 };
  }

  listUnknown(queue: string, options?: PageOptions) {
    return this.receiptsOf.listUnknown(queue, options);
  }

  listUnknownEverywhere(options?: { limit?: number }) {
    return this.receiptsOf.listUnknownEverywhere(options);
  }

  resolveUnknown(queue: string, id: string, decision: UnknownDecision) {
    return this.receiptsOf.resolveUnknown(queue, id, decision);
  }

  reconcileUnknown(queue: string) {
    return this.receiptsOf.reconcileUnknown(queue);
  }

  receipts(query: ReceiptQuery) {
    return this.receiptsOf.receipts(query);
  }

  pruneReceipts(retention?: RetentionOptions) {
    return this.receiptsOf.prune(retention);
  }

  listFailed(queue: string, options?: PageOptions) {
    return this.deadLetters.listFailed(queue, options);
  }

  retry(queue: string, id: string) {
    return this.deadLetters.retry(queue, id);
  }

  delete(queue: string, id: string) {
    return this.deadLetters.delete(queue, id);
  }

  async queues(): Promise<string[]> {
    const rows = await query<{ queue_name: string }>(this.pool, QUEUE_NAMES, {});
    return rows.map((r) => r.queue_name);
  }

  async waitForWork(queue: string, timeoutMs: number): Promise<boolean> {
    const name = checkQueue(queue);
    const ms = checkInteger("timeoutMs", timeoutMs, 0, 2_147_483_647);
    await this.listening();
    return this.signal.wait(name, ms, this.clock, async () => {
      const [row] = await query<{ next: number | null }>(this.pool, SQL.nextDue, { queue: name });
      return row?.next ?? null;
    });
  }
}

export type { ClaimedDelivery };
