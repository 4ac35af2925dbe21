import type { Pool, PoolClient, QueryConfig } from "pg";
import { StateError } from "../db/errors.js";
import { loadMigrations, type SchemaMigration } from "../db/schema.js";
import { wrapPgError } from "./pg-statements.js";

// Any constant works as long as every host uses the same one: "agentsta" in ASCII.
const MIGRATION_LOCK = BigInt("0x6167656e74737461").toString();

/**
 * Hosts wait here for one another's migrations, which can outlast the pool's statement timeout
 * on a large control plane. (`query_timeout` per query is pg's, missing from its types.)
 */
function unhurried(text: string, values?: unknown[]): QueryConfig {
  return { text, values, query_timeout: 3_600_000 } as QueryConfig;
}

const LEDGER = `CREATE TABLE IF NOT EXISTS agentstate_schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  applied_at BIGINT NOT NULL
)`;

/**
 * Brings the control-plane schema to the latest `schema/postgres/*.sql`, each file in its own
 * transaction and recorded in `agentstate_schema_migrations`. Hosts starting together wait for one
 * another on an advisory lock, so each file runs exactly once. Returns the versions applied now.
 */
export async function migratePostgres(pool: Pool, clock: () => number): Promise<number[]> {
  const client = await pool.connect().catch((error: unknown) => {
    throw wrapPgError(error);
  });
  try {
    await client.query(unhurried("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]));
    await client.query(LEDGER);
    const { rows } = await client.query<{ version: number; sha256: string }>(
      "SELECT version, sha256 FROM agentstate_schema_migrations ORDER BY version",
    );
    const migrations = loadMigrations("postgres");
    checkLedger(rows, migrations);
    const applied: number[] = [];
    for (const migration of migrations.slice(rows.length)) {
      await applyMigration(client, migration, clock());
      applied.push(migration.version);
    }
    return applied;
  } catch (error) {
    throw wrapPgError(error);
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
}

/** One file and its ledger row, in one transaction: a failure leaves neither. */
async function applyMigration(client: PoolClient, migration: SchemaMigration, at: number) {
  await client.query("BEGIN");
  try {
    await client.query(unhurried(migration.sql));
    await client.query("INSERT INTO agentstate_schema_migrations VALUES ($1, $2, $3, $4)", [
      migration.version,
      migration.name,
      migration.sha256,
      at,
    ]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  }
}

function checkLedger(
  rows: readonly { version: number; sha256: string }[],
  migrations: readonly { version: number; sha256: string }[],
): void {
  if (rows.length > migrations.length) {
    throw new StateError(
      "E_SCHEMA_TOO_NEW",
      `the control-plane database is at schema ${rows.length}; this agentstate knows ${migrations.length}`,
    );
  }
  for (const [index, row] of rows.entries()) {
    if (row.sha256 !== migrations[index]?.sha256) {
      throw new StateError(
        "E_SCHEMA_MISMATCH",
        `control-plane schema ${row.version} was applied from a different file than this agentstate's`,
        { details: { version: row.version } },
      );
    }
  }
}
