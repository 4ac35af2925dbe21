import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
import type { PageOptions } from "../stores/global/delivery-queue-options.js";
import {
  type DeliveryEntry,
  type DeliveryQueueRow,
  entryFromRow,
} from "../stores/global/delivery-queue-rows.js";
import { QUEUE_SQL } from "../stores/global/delivery-queue-sql.js";
import {
  checkDeliveryId,
  checkQueue,
  pageParams,
} from "../stores/global/delivery-receipt-params.js";
import { notifying } from "./pg-queue-sql.js";
import { pgStatements, query } from "./pg-statements.js";

// `QUEUE_SQL`'s statements as they are. A retry is one UPDATE whose WHERE re-checks that the entry
// is still a dead letter: of hosts racing to retry one, the others wait for its row lock, then
// find it pending and change nothing.
const SQL = pgStatements("dead_letters", {
  failedPage: QUEUE_SQL.failedPage,
  // Back in line: hosts waiting for work on its queue wake, as on an enqueue.
  retry: notifying(QUEUE_SQL.retry),
  delete: `${QUEUE_SQL.delete} RETURNING 1 AS deleted`,
});

/** Dead letters on PostgreSQL, as `DeliveryQueueStore` has them. */
export class PgDeadLetters {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async listFailed(queue: string, options: PageOptions = {}): Promise<DeliveryEntry[]> {
    const now = this.clock();
    const params = pageParams("listFailed", queue, options, (e) => e.failedAt, now);
    const rows = await query<DeliveryQueueRow>(this.pool, SQL.failedPage, params);
    return rows.map((row) => entryFromRow(row, now));
  }

  async retry(queue: string, id: string): Promise<DeliveryEntry | undefined> {
    const now = this.clock();
    const [row] = await query<DeliveryQueueRow>(this.pool, SQL.retry, {
      queue: checkQueue(queue),
      id: checkDeliveryId(id),
      now,
    });
    return row ? entryFromRow(row, now) : undefined;
  }

  /** Whatever state the entry is in, as on SQLite: a holder's later calls find it gone. */
  async delete(queue: string, id: string): Promise<boolean> {
    const key = { queue: checkQueue(queue), id: checkDeliveryId(id) };
    return (await query(this.pool, SQL.delete, key)).length > 0;
  }
}
