import { DELIVERY_QUEUE_COLUMNS } from "../stores/global/delivery-queue-rows.js";
import { FENCE_CTE } from "./pg-fence.js";

/** The channel every enqueue NOTIFYs, with the queue's name as payload. */
export const WORK_CHANNEL = "agentstate_queue";

const KEY = "queue_name = @queue AND id = @id";
const HELD = `${KEY} AND lease_id = @leaseId`;
// Values of an insert, cast because in INSERT … SELECT (the fenced form) PostgreSQL would take an
// untyped parameter for text.
const VALUES = `@queue, @id, @status, @payload, @sessionKey, @channel, @availableAt::bigint, NULL,
  NULL, @retryCount::integer, NULL, @lastError, @enqueuedAt::bigint, @now::bigint,
  @failedAt::bigint, @idempotencyKey, @agentId, @conversationId, NULL, NULL, NULL`;
const INSERT = `INSERT INTO delivery_queue_entries (${DELIVERY_QUEUE_COLUMNS.join(", ")})`;
// NOTIFY is sent at commit, and only when a row was added: rows stay the truth, it only wakes.
const NOTIFY = `SELECT added.*, pg_notify('${WORK_CHANNEL}', added.queue_name) AS notified FROM added`;
/** `statement` (which returns the rows it changed) NOTIFYing the queues of those rows. */
export function notifying(statement: string): string {
  return `WITH added AS (${statement}) ${NOTIFY}`;
}
const DEAD = "@permanent::boolean OR retry_count + 1 >= @maxAttempts::integer";

/**
 * `QUEUE_SQL` (the SQLite store's statements) in PostgreSQL's dialect, same semantics, one
 * statement each. The claim locks its pick with FOR UPDATE SKIP LOCKED: concurrent claimers on
 * other connections pass over a row being claimed instead of queueing behind it.
 */
export const PG_QUEUE_SQL = {
  insert: notifying(`${INSERT} VALUES (${VALUES}) ON CONFLICT DO NOTHING RETURNING *`),
  fencedInsert: `WITH ${FENCE_CTE},
    added AS (${INSERT} SELECT ${VALUES} FROM fence ON CONFLICT DO NOTHING RETURNING *)
    ${NOTIFY}`,
  byIdempotencyKey: `SELECT * FROM delivery_queue_entries
    WHERE queue_name = @queue AND idempotency_key = @idempotencyKey`,
  claim: `UPDATE delivery_queue_entries
    SET lease_owner = @owner, lease_id = @leaseId, available_at = @leaseUntil::bigint,
      last_attempt_at = @now::bigint, updated_at = @now::bigint
    WHERE (queue_name, id) = (SELECT queue_name, id FROM delivery_queue_entries
      WHERE queue_name = @queue AND status = 'pending' AND available_at <= @now::bigint
      ORDER BY available_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING *`,
  ack: `UPDATE delivery_queue_entries SET status = 'sent', settled_at = @now::bigint,
      platform_message_id = @platformMessageId, lease_id = NULL, updated_at = @now::bigint
    WHERE ${HELD} AND status IN ('pending', 'sending', 'unknown')
    RETURNING *`,
  // numeric: base × 2^40 overflows bigint where SQLite would quietly go to floating point.
  fail: `UPDATE delivery_queue_entries SET
      retry_count = retry_count + 1,
      status = CASE WHEN ${DEAD} THEN 'failed' ELSE 'pending' END,
      failed_at = CASE WHEN ${DEAD} THEN @now::bigint ELSE NULL END,
      available_at = @now::bigint + LEAST(@backoffMaxMs::numeric,
        @backoffBaseMs::numeric * power(2::numeric, LEAST(retry_count, 40)))::bigint,
      lease_owner = NULL, lease_id = NULL, last_error = @error, updated_at = @now::bigint,
      send_started_at = NULL
    WHERE ${HELD} AND status IN ('pending', 'sending', 'unknown')
    RETURNING *`,
  extend: `UPDATE delivery_queue_entries SET available_at = @leaseUntil::bigint,
      updated_at = @now::bigint
    WHERE ${HELD}
      AND (status = 'pending' OR (status = 'sending' AND available_at > @now::bigint))
    RETURNING *`,
  select: `SELECT * FROM delivery_queue_entries WHERE ${KEY}`,
  counts: `SELECT
      count(*) FILTER (WHERE status = 'pending' AND (lease_id IS NULL OR available_at <= @now::bigint))
        AS pending,
      count(*) FILTER (WHERE status IN ('pending', 'sending') AND lease_id IS NOT NULL
        AND available_at > @now::bigint) AS leased,
      count(*) FILTER (WHERE status = 'failed') AS failed
    FROM delivery_queue_entries
    WHERE queue_name = @queue AND status IN ('pending', 'sending', 'failed')`,
  nextDue: `SELECT min(available_at) AS next FROM delivery_queue_entries
    WHERE queue_name = @queue AND status = 'pending'`,
} as const;

/** Queues with entries not yet settled; the same text on both backends. */
export const QUEUE_NAMES_SQL = `SELECT DISTINCT queue_name FROM delivery_queue_entries
  WHERE status IN ('pending', 'sending', 'unknown', 'failed') ORDER BY queue_name`;
