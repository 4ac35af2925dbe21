import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
import { notUnknownError } from "../stores/global/delivery-queue-errors.js";
import type { PageOptions } from "../stores/global/delivery-queue-options.js";
import {
  type DeliveryEntry,
  type DeliveryQueueRow,
  entryFromRow,
} from "../stores/global/delivery-queue-rows.js";
import { pruneReceiptsSql, QUEUE_SQL } from "../stores/global/delivery-queue-sql.js";
import {
  checkQueue,
  emptyReconcileReport,
  pageParams,
  policyAnswer,
  receiptParams,
  recordPolicyOutcome,
  resolveParams,
  unknownEverywhereParams,
} from "../stores/global/delivery-receipt-params.js";
import type {
  ReceiptQuery,
  ReconcileReport,
  UnknownDecision,
  UnknownPolicy,
} from "../stores/global/delivery-receipts.js";
import { checkRetention, type RetentionOptions } from "../stores/retention.js";
import { notifying } from "./pg-queue-sql.js";
import { pgStatement, pgStatements, query } from "./pg-statements.js";

// `QUEUE_SQL`'s statements as they are: each decision is one UPDATE whose WHERE re-checks that the
// outcome is still unknown, so of hosts racing to resolve (or settle) one entry exactly one wins.
const SQL = pgStatements("receipts", {
  select: QUEUE_SQL.select,
  markUnknown: QUEUE_SQL.markUnknown,
  unknownPage: QUEUE_SQL.unknownPage,
  unknownAnywhere: QUEUE_SQL.unknownAnywhere,
  // Put back in line: hosts waiting for work on its queue wake, as on an enqueue.
  resolveResend: notifying(QUEUE_SQL.resolveResend),
  resolveDrop: QUEUE_SQL.resolveDrop,
  resolveSent: QUEUE_SQL.resolveSent,
  receiptsByConversation: QUEUE_SQL.receiptsByConversation,
  receiptsBySession: QUEUE_SQL.receiptsBySession,
  receiptsByAgent: QUEUE_SQL.receiptsByAgent,
});
// Counted on the server: a prune may delete a hundred thousand rows, which need not travel back.
const PRUNE = pgStatement(
  "receipts_prune",
  `WITH gone AS (${pruneReceiptsSql("ctid")} RETURNING 1) SELECT count(*) AS n FROM gone`,
);

/** Sends of unknown outcome and kept receipts on PostgreSQL, as `DeliveryQueueStore` has them. */
export class PgReceipts {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly onUnknown: UnknownPolicy | undefined,
  ) {}

  async listUnknown(queue: string, options: PageOptions = {}): Promise<DeliveryEntry[]> {
    const now = this.clock();
    const params = pageParams("listUnknown", queue, options, (e) => e.sendStartedAt, now);
    return this.entries(await query<DeliveryQueueRow>(this.pool, SQL.unknownPage, params), now);
  }

  async listUnknownEverywhere(options: { limit?: number } = {}): Promise<DeliveryEntry[]> {
    const now = this.clock();
    const params = unknownEverywhereParams(options, now);
    return this.entries(await query<DeliveryQueueRow>(this.pool, SQL.unknownAnywhere, params), now);
  }

  async resolveUnknown(queue: string, id: string, decision: UnknownDecision) {
    const now = this.clock();
    const { key, statement, params } = resolveParams(queue, id, decision, now);
    const [row] = await query<DeliveryQueueRow>(this.pool, SQL[statement], params);
    if (row) return entryFromRow(row, now);
    const [current] = await query<DeliveryQueueRow>(this.pool, SQL.select, key);
    throw notUnknownError(key, current, now);
  }

  async reconcileUnknown(queue: string): Promise<ReconcileReport> {
    const name = checkQueue(queue);
    await query(this.pool, SQL.markUnknown, { queue: name, now: this.clock() });
    const report = emptyReconcileReport();
    let page = await this.listUnknown(name, { limit: 1000 });
    while (page.length > 0) {
      for (const entry of page) await this.applyPolicy(entry, report);
      page = await this.listUnknown(name, { limit: 1000, after: page[page.length - 1] });
    }
    return report;
  }

  async receipts(receiptQuery: ReceiptQuery): Promise<DeliveryEntry[]> {
    const now = this.clock();
    const { statement, params } = receiptParams(receiptQuery, now);
    return this.entries(await query<DeliveryQueueRow>(this.pool, SQL[statement], params), now);
  }

  async prune(retention?: RetentionOptions): Promise<number> {
    const policy = checkRetention(retention);
    const [row] = await query<{ n: number }>(this.pool, PRUNE, {
      before: this.clock() - policy.receiptsMaxAgeMs,
      keep: policy.receiptsPerQueue,
    });
    return row?.n ?? 0;
  }

  private async applyPolicy(entry: DeliveryEntry, report: ReconcileReport): Promise<void> {
    const answer = policyAnswer(this.onUnknown, entry);
    try {
      if (answer !== "keep") await this.resolveUnknown(entry.queue, entry.id, answer);
    } catch (error) {
      recordPolicyOutcome(report, entry.id, answer, error);
      return;
    }
    recordPolicyOutcome(report, entry.id, answer);
  }

  private entries(rows: DeliveryQueueRow[], now: number): DeliveryEntry[] {
    return rows.map((row) => entryFromRow(row, now));
  }
}
