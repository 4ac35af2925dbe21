-- What session lists filter and sort by, read from the entry JSON by VIRTUAL generated columns:
-- computed from entry_json on every read and index write, so no code path can leave them out of
-- step with the JSON, which stays the exported truth. Each one reads only a value of the right
-- JSON type; anything else (missing, null, a number where text belongs) counts as absent. Text
-- columns hold '' when absent, never NULL: keyset pagination compares row values, and a NULL in
-- one would drop the row from every later page. The json_valid() guard keeps a corrupt row
-- writable and readable (it is reported as corrupt when parsed), rather than failing every
-- statement that touches the index.

-- Status of the entry's last run: "running", "done", "failed", "timeout".
ALTER TABLE session_entries ADD COLUMN status TEXT GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN ''
       WHEN json_type(entry_json, '$.status') = 'text' THEN entry_json ->> '$.status'
       ELSE '' END) VIRTUAL;

ALTER TABLE session_entries ADD COLUMN label TEXT GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN ''
       WHEN json_type(entry_json, '$.label') = 'text' THEN entry_json ->> '$.label'
       ELSE '' END) VIRTUAL;

-- `channel`, else `lastChannel`: heartbeat and older entries carry only the latter.
ALTER TABLE session_entries ADD COLUMN channel TEXT GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN ''
       WHEN json_type(entry_json, '$.channel') = 'text' AND entry_json ->> '$.channel' <> ''
         THEN entry_json ->> '$.channel'
       WHEN json_type(entry_json, '$.lastChannel') = 'text' THEN entry_json ->> '$.lastChannel'
       ELSE '' END) VIRTUAL;

ALTER TABLE session_entries ADD COLUMN model TEXT GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN ''
       WHEN json_type(entry_json, '$.model') = 'text' THEN entry_json ->> '$.model'
       ELSE '' END) VIRTUAL;

-- `parentSessionKey` (dashboard sessions), else `spawnedBy` (subagents): both name the parent key.
ALTER TABLE session_entries ADD COLUMN parent_session_key TEXT GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN ''
       WHEN json_type(entry_json, '$.parentSessionKey') = 'text'
         AND entry_json ->> '$.parentSessionKey' <> '' THEN entry_json ->> '$.parentSessionKey'
       WHEN json_type(entry_json, '$.spawnedBy') = 'text' THEN entry_json ->> '$.spawnedBy'
       ELSE '' END) VIRTUAL;

-- Archived and pinned are times (`archivedAt`, `pinnedAt`): any number means yes, anything else no.
ALTER TABLE session_entries ADD COLUMN archived INTEGER GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN 0
       ELSE coalesce(json_type(entry_json, '$.archivedAt') IN ('integer', 'real'), 0) END) VIRTUAL;

ALTER TABLE session_entries ADD COLUMN pinned INTEGER GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN 0
       ELSE coalesce(json_type(entry_json, '$.pinnedAt') IN ('integer', 'real'), 0) END) VIRTUAL;

-- `lastActivityAt`, else `lastInteractionAt`, else the row's updated_at: the first that is an
-- integer JavaScript reads exactly (a cursor carries it as a JSON number).
ALTER TABLE session_entries ADD COLUMN last_activity_at INTEGER GENERATED ALWAYS AS (
  CASE WHEN NOT json_valid(entry_json) THEN updated_at
       WHEN json_type(entry_json, '$.lastActivityAt') = 'integer'
         AND abs(entry_json ->> '$.lastActivityAt') <= 9007199254740991
         THEN entry_json ->> '$.lastActivityAt'
       WHEN json_type(entry_json, '$.lastInteractionAt') = 'integer'
         AND abs(entry_json ->> '$.lastInteractionAt') <= 9007199254740991
         THEN entry_json ->> '$.lastInteractionAt'
       ELSE updated_at END) VIRTUAL;

-- One index per filter and sort key, each ending in the list order (updated_at, session_key): an
-- equality filter walks its index already in the default order, and a sort walks its own index,
-- both without a temp B-tree and stopping after the page.
CREATE INDEX session_entries_by_status ON session_entries (status, updated_at, session_key);
CREATE INDEX session_entries_by_label ON session_entries (label, updated_at, session_key);
CREATE INDEX session_entries_by_channel ON session_entries (channel, updated_at, session_key);
CREATE INDEX session_entries_by_model ON session_entries (model, updated_at, session_key);
CREATE INDEX session_entries_by_parent
  ON session_entries (parent_session_key, updated_at, session_key);
CREATE INDEX session_entries_by_archived ON session_entries (archived, updated_at, session_key);
CREATE INDEX session_entries_by_pinned ON session_entries (pinned, updated_at, session_key);
CREATE INDEX session_entries_by_activity
  ON session_entries (last_activity_at, updated_at, session_key);
