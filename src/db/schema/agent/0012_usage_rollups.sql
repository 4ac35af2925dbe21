-- Token usage and activity per UTC day, kept as rollups so a chart reads a few hundred rows
-- instead of every event.
--
-- * `usage_event_facts` is the one definition of what an event contributes; the rollup writer, the
--   reader (which adds the events not rolled up yet) and the delete trigger all read it, so the
--   three cannot disagree.
-- * Every event lands in one row: an assistant message under its provider and model (`''` when
--   it names none), any other event under ('', ''). Events per day are the sum over a day's rows.
-- * Tokens count when the field is a JSON integer from 0 to 1e9 (anything else, a missing or
--   partial usage object included, counts 0: a bound so no hostile value can overflow a sum and
--   wedge the writer). Cost is `usage.cost.total` when it is a number from 0 to 1e9; a message
--   without one counts in `messages` but not in `priced_messages`: no price is ever invented.
-- * Rollups are written behind a watermark, like the search index: every event with an id up to
--   `usage_rollup_state.rolled_through` is counted, none above it. Writers fold the events above
--   it in bulk (with the search index, every 64 events or when idle); a reader adds them itself.
--   A database upgraded to this version starts at 0 and is rolled up in bounded batches on open.

CREATE VIEW usage_event_facts AS
SELECT id,
  created_at - ((created_at % 86400000) + 86400000) % 86400000 AS day_start_at,
  CASE WHEN assistant AND json_type(event_json, '$.message.provider') = 'text'
    THEN event_json ->> '$.message.provider' ELSE '' END AS provider,
  CASE WHEN assistant AND json_type(event_json, '$.message.model') = 'text'
    THEN event_json ->> '$.message.model' ELSE '' END AS model,
  assistant AS messages,
  CASE WHEN assistant AND json_type(event_json, '$.message.usage.input') = 'integer'
    AND event_json ->> '$.message.usage.input' BETWEEN 0 AND 1000000000
    THEN event_json ->> '$.message.usage.input' ELSE 0 END AS input_tokens,
  CASE WHEN assistant AND json_type(event_json, '$.message.usage.output') = 'integer'
    AND event_json ->> '$.message.usage.output' BETWEEN 0 AND 1000000000
    THEN event_json ->> '$.message.usage.output' ELSE 0 END AS output_tokens,
  CASE WHEN assistant AND json_type(event_json, '$.message.usage.cacheRead') = 'integer'
    AND event_json ->> '$.message.usage.cacheRead' BETWEEN 0 AND 1000000000
    THEN event_json ->> '$.message.usage.cacheRead' ELSE 0 END AS cache_read_tokens,
  CASE WHEN assistant AND json_type(event_json, '$.message.usage.cacheWrite') = 'integer'
    AND event_json ->> '$.message.usage.cacheWrite' BETWEEN 0 AND 1000000000
    THEN event_json ->> '$.message.usage.cacheWrite' ELSE 0 END AS cache_write_tokens,
  CASE WHEN priced THEN event_json ->> '$.message.usage.cost.total' ELSE 0.0 END AS cost,
  priced AS priced_messages
FROM (
  SELECT id, created_at, event_json, assistant,
    coalesce(assistant AND json_type(event_json, '$.message.usage.cost.total') IN ('integer', 'real')
      AND event_json ->> '$.message.usage.cost.total' BETWEEN 0 AND 1000000000, 0) AS priced
  FROM (
    SELECT id, created_at, event_json,
      event_type = 'message' AND coalesce(event_json ->> '$.message.role' = 'assistant', 0) AS assistant
    FROM transcript_events
  )
);

CREATE TABLE usage_daily (
  day_start_at INTEGER NOT NULL,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  events INTEGER NOT NULL,
  messages INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  priced_messages INTEGER NOT NULL,
  PRIMARY KEY (day_start_at, provider, model)
) STRICT, WITHOUT ROWID;

CREATE TABLE usage_rollup_state (
  name TEXT PRIMARY KEY,
  rolled_through INTEGER NOT NULL
) STRICT;

INSERT INTO usage_rollup_state (name, rolled_through) VALUES ('daily', 0);

-- Before the delete, the event is still there to be read through the view. Only an event at or
-- below the mark was counted. Rows that drop to no event go, so a day with nothing left is no row.
CREATE TRIGGER transcript_events_unroll BEFORE DELETE ON transcript_events BEGIN
  UPDATE usage_daily SET events = usage_daily.events - 1,
    messages = usage_daily.messages - f.messages,
    input_tokens = usage_daily.input_tokens - f.input_tokens,
    output_tokens = usage_daily.output_tokens - f.output_tokens,
    cache_read_tokens = usage_daily.cache_read_tokens - f.cache_read_tokens,
    cache_write_tokens = usage_daily.cache_write_tokens - f.cache_write_tokens,
    cost = usage_daily.cost - f.cost,
    priced_messages = usage_daily.priced_messages - f.priced_messages
  FROM (SELECT * FROM usage_event_facts WHERE id = old.id) AS f
  WHERE old.id <= (SELECT rolled_through FROM usage_rollup_state WHERE name = 'daily')
    AND usage_daily.day_start_at = f.day_start_at AND usage_daily.provider = f.provider
    AND usage_daily.model = f.model;
  DELETE FROM usage_daily WHERE events = 0 AND (day_start_at, provider, model) =
    (SELECT day_start_at, provider, model FROM usage_event_facts WHERE id = old.id);
END;

-- After it, the mark stays at or below the largest id left, as the search index's does: a new
-- event takes the largest id + 1, and a mark above it would count that event as rolled up.
CREATE TRIGGER transcript_events_unroll_mark AFTER DELETE ON transcript_events BEGIN
  UPDATE usage_rollup_state SET rolled_through = (SELECT coalesce(max(id), 0) FROM transcript_events)
  WHERE name = 'daily'
    AND rolled_through > (SELECT coalesce(max(id), 0) FROM transcript_events);
END;
