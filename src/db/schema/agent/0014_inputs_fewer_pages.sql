-- Inbound inputs rebuilt so that a turn which accepts, claims and completes its input writes as
-- few B-tree pages as it can: the row itself (the table's last leaf, twice: once when accepted,
-- once when completed) and one entry of (session_key, idempotency_key), which a retried delivery
-- needs. Two other trees that every accept wrote are gone from that path:
--
-- * The unique index on input_id. An id `accept` chooses is `in-<arrival_seq>-<random hex>`, so
--   the row is found by its arrival_seq and the id checked against the column. Only ids a caller
--   chose (and those of inputs accepted before this version) are in an index, a partial one.
-- * inputs_open, for an input accepted and claimed in one statement (`accept` with `claim`):
--   such a row has claim_unlisted = 1 and stays out of inputs_open while it holds that first
--   lease. It is found instead from unlisted_from: each row records, when inserted, the oldest
--   arrival_seq any such input then had, so the newest row bounds where they all are. Only an
--   insert makes an input unlisted, and inputs only leave that set (complete, release and
--   interrupt clear it), so the newest row's bound stays true until the next insert.
--
-- The rows are copied in the migration's own transaction: a kill leaves the old table whole.
-- Completed inputs are pruned by retention (1,000 per session key by default), which bounds it.
CREATE TABLE inputs_v14 (
  arrival_seq INTEGER PRIMARY KEY,
  input_id TEXT NOT NULL,
  -- 1 when the caller chose input_id (or it predates derived ids): found through inputs_chosen_id.
  id_chosen INTEGER NOT NULL CHECK (id_chosen IN (0, 1)),
  session_key TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  channel TEXT,
  conversation_id TEXT,
  received_at INTEGER NOT NULL,
  accepted_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('accepted', 'claimed', 'completed', 'interrupted')),
  lease_owner TEXT,
  lease_owner_pid INTEGER,
  lease_owner_started INTEGER,
  lease_expires_at INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  completed_at INTEGER,
  outcome_json TEXT,
  claim_unlisted INTEGER NOT NULL DEFAULT 0 CHECK (claim_unlisted IN (0, 1)),
  unlisted_from INTEGER NOT NULL,
  UNIQUE (session_key, idempotency_key)
) STRICT;

INSERT INTO inputs_v14 (arrival_seq, input_id, id_chosen, session_key, idempotency_key,
    payload_json, channel, conversation_id, received_at, accepted_at, state, lease_owner,
    lease_owner_pid, lease_owner_started, lease_expires_at, attempts, completed_at, outcome_json,
    claim_unlisted, unlisted_from)
  SELECT arrival_seq, input_id, 1, session_key, idempotency_key, payload_json, channel,
    conversation_id, received_at, accepted_at, state, lease_owner, lease_owner_pid,
    lease_owner_started, lease_expires_at, attempts, completed_at, outcome_json, 0, arrival_seq
  FROM inputs ORDER BY arrival_seq;

DROP TABLE inputs;
ALTER TABLE inputs_v14 RENAME TO inputs;

CREATE UNIQUE INDEX inputs_chosen_id ON inputs (input_id) WHERE id_chosen = 1;
-- As before, with the inputs `accept` claimed left out (see above). Its predicate is repeated
-- literally by every statement that should use it (see input-sql.ts).
CREATE INDEX inputs_open ON inputs (session_key, state, arrival_seq)
  WHERE claim_unlisted = 0 AND state IN ('accepted', 'claimed', 'interrupted');
CREATE INDEX inputs_interrupted ON inputs (arrival_seq) WHERE state = 'interrupted';
