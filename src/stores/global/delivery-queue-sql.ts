import { DELIVERY_QUEUE_COLUMNS } from "./delivery-queue-rows.js";

const KEY = "queue_name = @queue AND id = @id";

/**
 * The statements of `DeliveryQueueStore`. Each operation is one statement: in autocommit mode SQLite
 * takes the write lock before a writing statement reads anything, so the claim's pick (the
 * subquery) and its lease (the UPDATE) are one atomic step.
 */
export const QUEUE_SQL = {
  insert: `INSERT INTO delivery_queue_entries (${DELIVERY_QUEUE_COLUMNS.join(", ")})
    VALUES (@queue, @id, @status, @payload, @sessionKey, @channel, @availableAt, NULL, NULL,
      @retryCount, NULL, @lastError, @enqueuedAt, @now, @failedAt)
    ON CONFLICT DO NOTHING RETURNING *`,
  // The subquery walks the claimable index (queue_name, available_at): oldest due entry first.
  // The lease end becomes available_at, so a lapsed lease makes the entry due again by itself.
  claim: `UPDATE delivery_queue_entries
    SET lease_owner = @owner, lease_id = @leaseId, available_at = @leaseUntil,
      last_attempt_at = @now, updated_at = @now
    WHERE rowid = (SELECT rowid FROM delivery_queue_entries
      WHERE queue_name = @queue AND status = 'pending' AND available_at <= @now
      ORDER BY available_at, rowid LIMIT 1)
    RETURNING *`,
  ack: `DELETE FROM delivery_queue_entries WHERE ${KEY} AND lease_id = @leaseId`,
  // SET expressions see the row as it was: retry_count there is the count before this failure.
  fail: `UPDATE delivery_queue_entries SET
      retry_count = retry_count + 1,
      status = iif(@permanent OR retry_count + 1 >= @maxAttempts, 'failed', 'pending'),
      failed_at = iif(@permanent OR retry_count + 1 >= @maxAttempts, @now, NULL),
      available_at = @now + min(@backoffMaxMs, @backoffBaseMs * (1 << min(retry_count, 40))),
      lease_owner = NULL, lease_id = NULL, last_error = @error, updated_at = @now
    WHERE ${KEY} AND lease_id = @leaseId RETURNING *`,
  extend: `UPDATE delivery_queue_entries SET available_at = @leaseUntil, updated_at = @now
    WHERE ${KEY} AND lease_id = @leaseId RETURNING *`,
  select: `SELECT * FROM delivery_queue_entries WHERE ${KEY}`,
  failedPage: `SELECT * FROM delivery_queue_entries WHERE queue_name = @queue AND status = 'failed'
      AND (failed_at, id) > (@afterAt, @afterId)
    ORDER BY failed_at, id LIMIT @limit`,
  retry: `UPDATE delivery_queue_entries SET status = 'pending', retry_count = 0, failed_at = NULL,
      available_at = @now, updated_at = @now
    WHERE ${KEY} AND status = 'failed' RETURNING *`,
  delete: `DELETE FROM delivery_queue_entries WHERE ${KEY}`,
  counts: `SELECT
      count(*) FILTER (WHERE status = 'pending' AND (lease_id IS NULL OR available_at <= @now)) AS pending,
      count(*) FILTER (WHERE status = 'pending' AND lease_id IS NOT NULL AND available_at > @now) AS leased,
      count(*) FILTER (WHERE status = 'failed') AS failed
    FROM delivery_queue_entries WHERE queue_name = @queue`,
} as const;
