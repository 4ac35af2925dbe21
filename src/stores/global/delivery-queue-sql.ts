import { DELIVERY_QUEUE_COLUMNS } from "./delivery-queue-rows.js";

const KEY = "queue_name = @queue AND id = @id";
// A send begun whose holder's lease lapsed before it settled. The IN term repeats the partial
// index's predicate word for word so that SQLite can use that index (delivery_queue_entries_in_flight).
const IN_FLIGHT = "status IN ('sending', 'unknown')";
const UNKNOWN = `${IN_FLIGHT} AND (status = 'unknown' OR available_at <= @now)`;
// The casts tell PostgreSQL a parameter's type where nothing else in the term does.
const RECEIPT_FILTERS = `(CAST(@queue AS TEXT) IS NULL OR queue_name = @queue)
    AND (CAST(@sessionKey AS TEXT) IS NULL OR session_key = @sessionKey)
    AND (CAST(@agentId AS TEXT) IS NULL OR agent_id = @agentId)
    AND (CAST(@conversationId AS TEXT) IS NULL OR conversation_id = @conversationId)
    AND (CAST(@status AS TEXT) IS NULL
      OR CASE WHEN status = 'sending' AND available_at <= @now THEN 'unknown' ELSE status END = @status)`;

function receiptsBy(column: string, param: string): string {
  return `SELECT * FROM delivery_queue_entries WHERE ${column} = @${param} AND ${RECEIPT_FILTERS}
    ORDER BY enqueued_at DESC, id DESC LIMIT @limit`;
}

/**
 * Sent and failed deliveries past the policy's age or beyond its count per queue. Pending entries,
 * sends in flight and sends of unknown outcome are never deleted: they are still to be decided.
 * The same text runs on SQLite (`pruneReceipts`) and PostgreSQL (`cp.queue.pruneReceipts`) but for
 * `row`, the engine's row identity (rowid, ctid): SQLite's sweep keeps picking rows as it always
 * did, since picking them by (queue_name, id) measured no faster there.
 */
export function pruneReceiptsSql(row: "rowid" | "ctid"): string {
  return `DELETE FROM delivery_queue_entries WHERE status IN ('sent', 'failed')
    AND (coalesce(settled_at, failed_at, updated_at) <= @before OR ${row} IN (
      SELECT ${row} FROM (
        SELECT ${row}, row_number() OVER (PARTITION BY queue_name
          ORDER BY coalesce(settled_at, failed_at, updated_at) DESC, id DESC) AS newer
        FROM delivery_queue_entries WHERE status IN ('sent', 'failed')) AS ranked
      WHERE newer > @keep))`;
}

/**
 * The statements of `DeliveryQueueStore`. Those of sends begun, receipts and unknown outcomes
 * are written in the SQL that SQLite and PostgreSQL share: the PostgreSQL queue runs them as they
 * are. Each operation is one statement: in autocommit mode SQLite
 * takes the write lock before a writing statement reads anything, so the claim's pick (the
 * subquery) and its lease (the UPDATE) are one atomic step.
 */
export const QUEUE_SQL = {
  insert: `INSERT INTO delivery_queue_entries (${DELIVERY_QUEUE_COLUMNS.join(", ")})
    VALUES (@queue, @id, @status, @payload, @sessionKey, @channel, @availableAt, NULL, NULL,
      @retryCount, NULL, @lastError, @enqueuedAt, @now, @failedAt, @idempotencyKey, @agentId,
      @conversationId, NULL, NULL, NULL)
    ON CONFLICT DO NOTHING RETURNING *`,
  byIdempotencyKey: `SELECT * FROM delivery_queue_entries
    WHERE queue_name = @queue AND idempotency_key = @idempotencyKey`,
  // The subquery walks the claimable index (queue_name, available_at): oldest due entry first.
  // The lease end becomes available_at, so a lapsed lease makes the entry due again by itself.
  // Only pending rows are in that index: sending, sent, unknown and failed ones are never handed out.
  claim: `UPDATE delivery_queue_entries
    SET lease_owner = @owner, lease_id = @leaseId, available_at = @leaseUntil,
      last_attempt_at = @now, updated_at = @now
    WHERE rowid = (SELECT rowid FROM delivery_queue_entries
      WHERE queue_name = @queue AND status = 'pending' AND available_at <= @now
      ORDER BY available_at, rowid LIMIT 1)
    RETURNING *`,
  // Only under a live lease: begun after a lapse, the entry could already be someone else's.
  beginSend: `UPDATE delivery_queue_entries SET status = 'sending', send_started_at = @now,
      updated_at = @now
    WHERE ${KEY} AND lease_id = @leaseId AND status = 'pending' AND available_at > @now
    RETURNING *`,
  // `ack` is this statement too. A holder whose lease lapsed may still settle (or fail) as long
  // as nobody took the entry over: it is the one that knows what the platform answered.
  ack: `UPDATE delivery_queue_entries SET status = 'sent', settled_at = @now,
      platform_message_id = @platformMessageId, lease_id = NULL, updated_at = @now
    WHERE ${KEY} AND lease_id = @leaseId AND status IN ('pending', 'sending', 'unknown')
    RETURNING *`,
  // SET expressions see the row as it was: retry_count there is the count before this failure.
  fail: `UPDATE delivery_queue_entries SET
      retry_count = retry_count + 1,
      status = iif(@permanent OR retry_count + 1 >= @maxAttempts, 'failed', 'pending'),
      failed_at = iif(@permanent OR retry_count + 1 >= @maxAttempts, @now, NULL),
      available_at = @now + min(@backoffMaxMs, @backoffBaseMs * (1 << min(retry_count, 40))),
      lease_owner = NULL, lease_id = NULL, last_error = @error, updated_at = @now,
      send_started_at = NULL
    WHERE ${KEY} AND lease_id = @leaseId AND status IN ('pending', 'sending', 'unknown')
    RETURNING *`,
  // A lapsed send stays unknown: extending it would hide it from a gateway deciding about it.
  extend: `UPDATE delivery_queue_entries SET available_at = @leaseUntil, updated_at = @now
    WHERE ${KEY} AND lease_id = @leaseId
      AND (status = 'pending' OR (status = 'sending' AND available_at > @now))
    RETURNING *`,
  select: `SELECT * FROM delivery_queue_entries WHERE ${KEY}`,
  failedPage: `SELECT * FROM delivery_queue_entries WHERE queue_name = @queue AND status = 'failed'
      AND (failed_at, id) > (@afterAt, @afterId)
    ORDER BY failed_at, id LIMIT @limit`,
  retry: `UPDATE delivery_queue_entries SET status = 'pending', retry_count = 0, failed_at = NULL,
      available_at = @now, updated_at = @now
    WHERE ${KEY} AND status = 'failed' RETURNING *`,
  delete: `DELETE FROM delivery_queue_entries WHERE ${KEY}`,
  // Each count walks a partial index, so receipts kept by the thousand are never read.
  counts: `SELECT
      (SELECT count(*) FROM delivery_queue_entries WHERE queue_name = @queue AND status = 'pending'
        AND (lease_id IS NULL OR available_at <= @now)) AS pending,
      (SELECT count(*) FROM delivery_queue_entries WHERE queue_name = @queue AND status = 'pending'
        AND lease_id IS NOT NULL AND available_at > @now)
      + (SELECT count(*) FROM delivery_queue_entries WHERE queue_name = @queue AND ${IN_FLIGHT}
        AND status = 'sending' AND available_at > @now) AS leased,
      (SELECT count(*) FROM delivery_queue_entries WHERE queue_name = @queue AND status = 'failed')
        AS failed`,
  markUnknown: `UPDATE delivery_queue_entries SET status = 'unknown', updated_at = @now
    WHERE queue_name = @queue AND ${IN_FLIGHT} AND status = 'sending' AND available_at <= @now`,
  unknownPage: `SELECT * FROM delivery_queue_entries WHERE queue_name = @queue AND ${UNKNOWN}
      AND (send_started_at, id) > (@afterAt, @afterId)
    ORDER BY send_started_at, id LIMIT @limit`,
  // Every queue: the in-flight partial index holds only sends begun, so the sort stays small.
  unknownAnywhere: `SELECT * FROM delivery_queue_entries WHERE ${UNKNOWN}
    ORDER BY send_started_at, queue_name, id LIMIT @limit`,
  resolveResend: `UPDATE delivery_queue_entries SET status = 'pending', available_at = @now,
      lease_owner = NULL, lease_id = NULL, send_started_at = NULL, updated_at = @now
    WHERE ${KEY} AND ${UNKNOWN} RETURNING *`,
  resolveDrop: `UPDATE delivery_queue_entries SET status = 'failed', failed_at = @now,
      last_error = @error, lease_owner = NULL, lease_id = NULL, updated_at = @now
    WHERE ${KEY} AND ${UNKNOWN} RETURNING *`,
  resolveSent: `UPDATE delivery_queue_entries SET status = 'sent', settled_at = @now,
      platform_message_id = @platformMessageId, lease_id = NULL, updated_at = @now
    WHERE ${KEY} AND ${UNKNOWN} RETURNING *`,
  // One statement per driving index; the other filters are checked on the rows it yields.
  receiptsByConversation: receiptsBy("conversation_id", "conversationId"),
  receiptsBySession: receiptsBy("session_key", "sessionKey"),
  receiptsByAgent: receiptsBy("agent_id", "agentId"),
} as const;
