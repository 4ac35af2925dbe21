// The agent registry's statements, shared by `AgentRegistryStore` (SQLite) and the PostgreSQL
// control plane: the same text on both, `@name`s turned into `$n`s on PostgreSQL. SQLite runs a
// registration as its two upserts in one transaction; PostgreSQL as one statement that holds
// both (see AGENT_REGISTRY_PG_SQL), built from the same text.

const COLUMNS = `a.agent_id, a.created_at, a.updated_at, d.path, d.schema_version, d.last_seen_at,
  d.size_bytes, d.quick_check, d.quick_checked_at`;
const JOINED = `SELECT ${COLUMNS} FROM agents a JOIN agent_databases d ON d.agent_id = a.agent_id`;

// A registration keeps the first one's created_at: the upsert never sets it again.
const UPSERT_AGENT = `INSERT INTO agents (agent_id, created_at, updated_at, agent_db_path)
    VALUES (@agentId, @now, @now, @path)
  ON CONFLICT (agent_id) DO UPDATE SET updated_at = excluded.updated_at,
    agent_db_path = excluded.agent_db_path`;
const UPSERT_DATABASE = `INSERT INTO agent_databases (agent_id, path, schema_version, last_seen_at, size_bytes)
    VALUES (@agentId, @path, @schemaVersion, @now, @sizeBytes)
  ON CONFLICT (agent_id) DO UPDATE SET path = excluded.path, schema_version = excluded.schema_version,
    last_seen_at = excluded.last_seen_at, size_bytes = excluded.size_bytes`;
// A refresh without a quick_check keeps the last one.
const REFRESH = `UPDATE agent_databases SET size_bytes = @sizeBytes, last_seen_at = @now,
    quick_check = COALESCE(@quickCheck, quick_check),
    quick_checked_at = COALESCE(@quickCheckedAt, quick_checked_at)
  WHERE agent_id = @agentId`;

export const AGENT_REGISTRY_SQL = {
  upsertAgent: UPSERT_AGENT,
  upsertDatabase: UPSERT_DATABASE,
  refresh: `${REFRESH} RETURNING agent_id`,
  select: `${JOINED} WHERE a.agent_id = @agentId`,
  page: `${JOINED} WHERE a.agent_id > @after ORDER BY a.agent_id LIMIT @limit`,
  all: `${JOINED} ORDER BY a.agent_id`,
  remove: "DELETE FROM agents WHERE agent_id = @agentId RETURNING agent_id",
  // The home's open path: an agents row may predate its agent_databases row.
  registration: `SELECT a.created_at, d.schema_version FROM agents a
    LEFT JOIN agent_databases d ON d.agent_id = a.agent_id WHERE a.agent_id = @agentId`,
  exists: "SELECT agent_id FROM agents WHERE agent_id = @agentId",
} as const;

/** The writes as one statement each on PostgreSQL, whose data-modifying CTEs SQLite lacks. */
export const AGENT_REGISTRY_PG_SQL = {
  register: `WITH a AS (${UPSERT_AGENT} RETURNING agent_id, created_at, updated_at),
    d AS (${UPSERT_DATABASE} RETURNING *)
    SELECT ${COLUMNS} FROM a JOIN d ON d.agent_id = a.agent_id`,
  refresh: `WITH d AS (${REFRESH} RETURNING *)
    SELECT ${COLUMNS} FROM d JOIN agents a ON a.agent_id = d.agent_id`,
  select: AGENT_REGISTRY_SQL.select,
  page: AGENT_REGISTRY_SQL.page,
  all: AGENT_REGISTRY_SQL.all,
  remove: AGENT_REGISTRY_SQL.remove,
} as const;
