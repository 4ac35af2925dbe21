/**
 * The predicate of the partial index `inputs_open`, repeated literally in each statement that
 * should use it: SQLite uses a partial index only when the query's WHERE implies the index's, and
 * `state = 'accepted'` alone does not imply an IN list.
 */
const OPEN = "claim_unlisted = 0 AND state IN ('accepted', 'claimed', 'interrupted')";

/**
 * The inputs `accept` claimed that still hold that lease (`claim_unlisted = 1`, not in
 * `inputs_open`): each is at or after the bound the newest row recorded (see migration 0014).
 * Statements filter them by `+session_key`: the unary plus keeps SQLite on the arrival_seq range,
 * a handful of rows, instead of every input the session key ever had.
 */
const UNLISTED = `claim_unlisted = 1 AND state = 'claimed'
  AND arrival_seq >= (SELECT unlisted_from FROM inputs ORDER BY arrival_seq DESC LIMIT 1)`;

/**
 * The row of an input id: `@seq` is the arrival_seq a derived id names (null for a chosen id,
 * found through the partial index `inputs_chosen_id`); the id column must match either way.
 */
const ID = `arrival_seq = coalesce(@seq,
    (SELECT arrival_seq FROM inputs WHERE input_id = @inputId AND id_chosen = 1))
  AND input_id = @inputId`;

const LEASE = `state = 'claimed', lease_owner = @owner, lease_owner_pid = @pid,
      lease_owner_started = @started, lease_expires_at = @until, attempts = attempts + 1`;

/** A lease held by this very process under this owner name: the name alone could be reused. */
const HELD =
  "state = 'claimed' AND lease_owner = @owner AND lease_owner_pid = @pid AND lease_owner_started IS @started";

/**
 * The statements of `InputStore`. Claim is one statement: in autocommit mode SQLite takes the
 * write lock before a writing statement reads anything, so picking the inputs (the subquery) and
 * leasing them (the UPDATE) are one atomic step, and two claimers never get the same input.
 */
export const INPUT_SQL = {
  // arrival_seq is chosen here rather than left to SQLite so that a derived id can name it.
  // `@owner` set: accepted and claimed in one statement, as `claim` would lease it.
  insert: `INSERT INTO inputs (arrival_seq, input_id, id_chosen, session_key, idempotency_key,
      payload_json, channel, conversation_id, received_at, accepted_at, state, lease_owner,
      lease_owner_pid, lease_owner_started, lease_expires_at, attempts, claim_unlisted,
      unlisted_from)
    SELECT seq, coalesce(@inputId, 'in-' || seq || '-' || @tag), @inputId IS NOT NULL,
      @sessionKey, @idempotencyKey, @payload, @channel, @conversationId, @receivedAt, @now,
      iif(@owner IS NULL, 'accepted', 'claimed'), @owner, iif(@owner IS NULL, NULL, @pid),
      iif(@owner IS NULL, NULL, @started), @until, @owner IS NOT NULL, @owner IS NOT NULL,
      coalesce((SELECT arrival_seq FROM inputs WHERE ${UNLISTED} ORDER BY arrival_seq LIMIT 1),
        seq)
    FROM (SELECT coalesce((SELECT arrival_seq FROM inputs ORDER BY arrival_seq DESC LIMIT 1), 0)
      + 1 AS seq) WHERE true
    ON CONFLICT (session_key, idempotency_key) DO NOTHING RETURNING *`,
  byKey: "SELECT * FROM inputs WHERE session_key = ? AND idempotency_key = ?",
  byId: `SELECT * FROM inputs WHERE ${ID}`,
  // The subquery walks inputs_open: the session's waiting inputs, oldest first.
  claim: `UPDATE inputs SET ${LEASE}
    WHERE arrival_seq IN (SELECT arrival_seq FROM inputs
      WHERE session_key = @sessionKey AND state = 'accepted' AND ${OPEN}
      ORDER BY arrival_seq LIMIT @limit)
    RETURNING *`,
  // The same for one input (the usual claim): "=" instead of "IN" lets SQLite update the row in
  // one pass, where the IN list is gathered first; measured ~3x faster (bench/inbound.mjs).
  claimOne: `UPDATE inputs SET ${LEASE}
    WHERE arrival_seq = (SELECT arrival_seq FROM inputs
      WHERE session_key = @sessionKey AND state = 'accepted' AND ${OPEN}
      ORDER BY arrival_seq LIMIT 1)
    RETURNING *`,
  extend: `UPDATE inputs SET lease_expires_at = @until WHERE ${ID} AND ${HELD}
    RETURNING *`,
  release: `UPDATE inputs SET state = 'accepted', lease_expires_at = NULL, claim_unlisted = 0
    WHERE ${ID} AND ${HELD} RETURNING *`,
  complete: `UPDATE inputs SET state = 'completed', completed_at = @now, lease_expires_at = NULL,
      outcome_json = @outcome
    WHERE ${ID} AND ${HELD} RETURNING *`,
  lapsed: `SELECT * FROM inputs WHERE state = 'claimed' AND ${OPEN} AND session_key = @sessionKey
      AND lease_expires_at <= @now
    UNION ALL SELECT * FROM inputs WHERE ${UNLISTED} AND +session_key = @sessionKey
      AND lease_expires_at <= @now
    ORDER BY arrival_seq`,
  interrupt: `UPDATE inputs SET state = 'interrupted', lease_expires_at = NULL, claim_unlisted = 0
    WHERE arrival_seq = @seq AND state = 'claimed'`,
  requeue: `UPDATE inputs SET state = 'accepted' WHERE ${ID} AND state = 'interrupted'
    RETURNING *`,
  abandon: `UPDATE inputs SET state = 'completed', completed_at = @now, lease_expires_at = NULL,
      outcome_json = @outcome
    WHERE ${ID} AND state IN ('accepted', 'interrupted') RETURNING *`,
} as const;

// The entry's session while it has not ended, else the newest open session of the key (one
// written by appends that named the key but never made an entry).
export const ACTIVE_SESSION_SQL = `SELECT coalesce(
      (SELECT s.session_id FROM session_entries e
        JOIN sessions s ON s.session_id = json_extract(e.entry_json, '$.sessionId')
        WHERE e.session_key = @key AND s.ended_at IS NULL),
      (SELECT session_id FROM sessions WHERE session_key = @key AND ended_at IS NULL
        ORDER BY created_at DESC, session_no DESC LIMIT 1)) AS session_id`;

/**
 * `list` statements by the filters given: each one can use an index, which an `OR NULL` could not.
 * Completed inputs are in no index but the table's own order (and the session key's unique one):
 * listing them is a scan in arrival order, which pages through them as fast as it reads.
 */
export const INPUT_LIST_SQL = {
  all: "SELECT * FROM inputs WHERE arrival_seq > @after ORDER BY arrival_seq LIMIT @limit",
  state: `SELECT * FROM inputs WHERE state = @state AND arrival_seq > @after
    ORDER BY arrival_seq LIMIT @limit`,
  interrupted: `SELECT * FROM inputs WHERE state = 'interrupted' AND arrival_seq > @after
    ORDER BY arrival_seq LIMIT @limit`,
  session: `SELECT * FROM inputs WHERE session_key = @sessionKey AND arrival_seq > @after
    ORDER BY arrival_seq LIMIT @limit`,
  both: `SELECT * FROM inputs WHERE state = @state AND session_key = @sessionKey
      AND arrival_seq > @after ORDER BY arrival_seq LIMIT @limit`,
  bothOpen: `SELECT * FROM inputs WHERE state = @state AND ${OPEN} AND session_key = @sessionKey
      AND arrival_seq > @after ORDER BY arrival_seq LIMIT @limit`,
  // Claimed inputs of a key: those in inputs_open and those `accept` claimed.
  bothClaimed: `SELECT * FROM inputs WHERE state = 'claimed' AND ${OPEN}
      AND session_key = @sessionKey AND arrival_seq > @after
    UNION ALL SELECT * FROM inputs WHERE ${UNLISTED} AND +session_key = @sessionKey
      AND arrival_seq > @after
    ORDER BY arrival_seq LIMIT @limit`,
} as const;

/** The named parameters of the `insert` statement. */
export type AcceptRow = {
  inputId: string | null;
  tag: string;
  sessionKey: string;
  idempotencyKey: string;
  payload: string;
  channel: string | null;
  conversationId: string | null;
  receivedAt: number;
  now: number;
  owner: string | null;
  pid: number | null;
  started: number | null;
  until: number | null;
};
