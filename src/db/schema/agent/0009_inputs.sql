-- Inbound inputs: a user message a gateway accepted, held from the moment it is accepted until an
-- agent turn has written its transcript, so that no accepted message is lost and none is answered
-- twice across a crash. A retried delivery of the same message finds its first row by
-- (session_key, idempotency_key) and, once completed, what it was answered with (outcome_json).
--
-- arrival_seq is the arrival order. It is an INTEGER PRIMARY KEY (the rowid) rather than
-- accepted_at because two inputs can arrive in the same millisecond and a clock can step back,
-- and it is declared rather than left implicit because VACUUM may renumber an implicit rowid.
CREATE TABLE inputs (
  arrival_seq INTEGER PRIMARY KEY,
  input_id TEXT NOT NULL UNIQUE,
  -- The routing slot it is for (session_entries.session_key); no foreign key: a message may be
  -- accepted before its session entry exists.
  session_key TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  channel TEXT,
  -- A conversation of the global database: another file, so no foreign key.
  conversation_id TEXT,
  -- When the channel says the message was sent or received (default: accepted_at).
  received_at INTEGER NOT NULL,
  accepted_at INTEGER NOT NULL,
  -- accepted: waiting for a turn. claimed: a turn holds it under a lease. completed: answered (or
  -- abandoned), outcome_json says how. interrupted: its lease lapsed and its owner process is
  -- dead; it waits for the gateway to requeue or abandon it, because the turn may have half-run.
  state TEXT NOT NULL CHECK (state IN ('accepted', 'claimed', 'completed', 'interrupted')),
  -- Who holds (or last held) it: a name the caller chose, and the process, so that a lease whose
  -- owner died can be told from one whose owner is merely slow.
  lease_owner TEXT,
  lease_owner_pid INTEGER,
  lease_owner_started INTEGER,
  lease_expires_at INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  completed_at INTEGER,
  outcome_json TEXT,
  UNIQUE (session_key, idempotency_key)
) STRICT;

-- A session's open inputs in one state, in arrival order: the next claimable ones (state
-- 'accepted'), the claimed ones to recover, the interrupted ones to report. Partial: completing an
-- input takes it out, so completed inputs (nearly all rows, kept for retried deliveries) cost this
-- index nothing, and each write of a turn touches one B-tree page fewer. Its predicate is a literal
-- that every statement using it repeats (see input-sql.ts).
CREATE INDEX inputs_open ON inputs (session_key, state, arrival_seq)
  WHERE state IN ('accepted', 'claimed', 'interrupted');
-- Every interrupted input of the agent, in arrival order: rows enter it only when a lease lapses
-- with its owner dead, so the turn's writes never touch it.
CREATE INDEX inputs_interrupted ON inputs (arrival_seq) WHERE state = 'interrupted';
