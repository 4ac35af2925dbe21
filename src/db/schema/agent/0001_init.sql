-- Per-agent data-plane database. This first version holds the agent's scoped key-value state;
-- sessions, transcripts, scratch files and memory arrive in later numbered files.
-- Times are INTEGER Unix milliseconds named *_at; ids are TEXT.

CREATE TABLE kv (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  value_json TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;
