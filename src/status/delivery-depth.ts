import type { Database } from "../db/database.js";

export interface QueueDepth {
  queue: string;
  /** Waiting for a sender (now or after a retry's back-off). */
  pending: number;
  /** Claimed and being sent (as stored: one whose lease lapsed is still counted here). */
  sending: number;
  /** Sends that began and never settled: maybe delivered. */
  unknown: number;
  /** Waiting, in flight or of unknown outcome: pending + sending + unknown. */
  depth: number;
  /** Dead letters: given up on after their last attempt. */
  deadLetters: number;
  /** The newest dead letter's error. */
  lastDeadLetter: { at: number | null; error: string | null } | null;
}

interface Row {
  queue: string;
  status: string;
  n: number;
}

/**
 * Depth and dead letters of every delivery queue. Each count walks a partial index (pending,
 * failed, in flight), never the sent receipts, which are kept by the hundred thousand.
 */
export function deliveryDepth(db: Database): QueueDepth[] {
  const rows = db
    .prepare<Row>(
      `SELECT queue_name AS queue, 'pending' AS status, count(*) AS n FROM delivery_queue_entries
         WHERE status = 'pending' GROUP BY queue_name
       UNION ALL
       SELECT queue_name, 'failed', count(*) FROM delivery_queue_entries
         WHERE status = 'failed' GROUP BY queue_name
       UNION ALL
       SELECT queue_name, status, count(*) FROM delivery_queue_entries
         WHERE status IN ('sending', 'unknown') GROUP BY queue_name, status`,
    )
    .all();
  const lastDead = db.prepare<{ at: number | null; error: string | null }>(
    `SELECT failed_at AS at, last_error AS error FROM delivery_queue_entries
     WHERE status = 'failed' AND queue_name = ? ORDER BY failed_at DESC LIMIT 1`,
  );
  const queues = new Map<string, Record<string, number>>();
  for (const { queue, status, n } of rows) {
    const counts = queues.get(queue) ?? {};
    counts[status] = n;
    queues.set(queue, counts);
  }
  return [...queues.keys()].sort().map((queue) => {
    const c = queues.get(queue) ?? {};
    const [pending, sending, unknown, failed] = [c.pending, c.sending, c.unknown, c.failed].map(
      (n) => n ?? 0,
    ) as [number, number, number, number];
    return {
      queue,
      pending,
      sending,
      unknown,
      depth: pending + sending + unknown,
      deadLetters: failed,
      lastDeadLetter: failed > 0 ? (lastDead.get(queue) ?? null) : null,
    };
  });
}
