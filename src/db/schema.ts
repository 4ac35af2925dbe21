import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { SqlDriver } from "./driver.js";
import { StateError } from "./errors.js";
import { withTempInMemory } from "./temp-store.js";

export const DATABASE_ROLES = ["global", "agent", "cold-index"] as const;
export type DatabaseRole = (typeof DATABASE_ROLES)[number];
/** The roles of SQLite databases, and the control plane's PostgreSQL schema (`schema/postgres/`). */
export type SchemaSet = DatabaseRole | "postgres";

export interface SchemaMigration {
  version: number;
  name: string;
  sha256: string;
  sql: string;
}

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const cache = new Map<SchemaSet, readonly SchemaMigration[]>();

export function schemaDir(role: SchemaSet): string {
  return fileURLToPath(new URL(`./schema/${role}/`, import.meta.url));
}

/**
 * The committed migrations of a role, found by sorted file name (no hand-kept list). Numbering
 * must run 1, 2, 3 … without gaps: a gap means a file was lost, and guessing would be worse.
 */
export function loadMigrations(role: SchemaSet): readonly SchemaMigration[] {
  const cached = cache.get(role);
  if (cached) return cached;
  const dir = schemaDir(role);
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort();
  const migrations = files.map((file, index): SchemaMigration => {
    const match = MIGRATION_FILE.exec(file);
    if (!match || Number(match[1]) !== index + 1) {
      throw new Error(`schema file ${dir}${file} is out of sequence; expected ${index + 1} next`);
    }
    const sql = readFileSync(`${dir}${file}`, "utf8");
    return {
      version: index + 1,
      name: match[2] as string,
      sql,
      sha256: createHash("sha256").update(sql).digest("hex"),
    };
  });
  const frozen = Object.freeze(migrations);
  cache.set(role, frozen);
  return frozen;
}

export function latestSchemaVersion(role: DatabaseRole): number {
  return loadMigrations(role).length;
}

function readUserVersion(driver: SqlDriver): number {
  const row = driver.prepare<{ user_version: number }>("PRAGMA user_version").get();
  return row?.user_version ?? 0;
}

function tooNew(driver: SqlDriver, found: number, supported: number): StateError {
  return new StateError(
    "E_SCHEMA_TOO_NEW",
    `database ${driver.path} has schema version ${found}, newer than this agentstate supports (${supported}); upgrade agentstate to open it`,
    { details: { path: driver.path, found, supported } },
  );
}

function verifyApplied(driver: SqlDriver, migrations: readonly SchemaMigration[]): void {
  const rows = driver
    .prepare<{ version: number; sha256: string }>(
      "SELECT version, sha256 FROM schema_migrations ORDER BY version",
    )
    .all();
  for (const row of rows) {
    const expected = migrations[row.version - 1];
    if (expected && expected.sha256 !== row.sha256) {
      throw new StateError(
        "E_SCHEMA_MISMATCH",
        `database ${driver.path} was created by schema ${row.version} with a different content than this agentstate ships (${expected.name})`,
        { details: { path: driver.path, version: row.version } },
      );
    }
  }
}

export interface MigrationResult {
  from: number;
  to: number;
  applied: readonly { version: number; name: string }[];
}

/**
 * Brings a database to the latest schema of its role. Each pending migration runs in one
 * `BEGIN IMMEDIATE` transaction together with its bookkeeping row, so two processes opening a new
 * file at once apply it exactly once, and a crash leaves either the old or the new version.
 * `checkedAt`: the version this process already verified the file at, if any.
 */
export function migrate(
  driver: SqlDriver,
  role: DatabaseRole,
  checkedAt?: number,
): MigrationResult {
  const migrations = loadMigrations(role);
  const latest = migrations.length;
  const from = readUserVersion(driver);
  if (from > latest) throw tooNew(driver, from, latest);
  const applied: { version: number; name: string }[] = [];
  if (from === latest) {
    // The same file at the same version was verified by an earlier open (checked-files.ts).
    if (from !== checkedAt) verifyApplied(driver, migrations);
    return { from, to: from, applied };
  }
  withTempInMemory(driver, () => applyPending(driver, migrations, applied));
  return { from, to: latest, applied };
}

function applyPending(
  driver: SqlDriver,
  migrations: readonly SchemaMigration[],
  applied: { version: number; name: string }[],
): void {
  const latest = migrations.length;
  driver.exec("BEGIN IMMEDIATE");
  try {
    const current = readUserVersion(driver);
    if (current > latest) throw tooNew(driver, current, latest);
    driver.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      sha256 TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`);
    verifyApplied(driver, migrations);
    const record = driver.prepare(
      "INSERT INTO schema_migrations (version, name, sha256, applied_at) VALUES (?, ?, ?, ?)",
    );
    for (const migration of migrations.slice(current)) {
      driver.exec(migration.sql);
      record.run(migration.version, migration.name, migration.sha256, Date.now());
      applied.push({ version: migration.version, name: migration.name });
    }
    driver.exec(`PRAGMA user_version = ${latest}`);
    driver.exec("COMMIT");
  } catch (error) {
    if (driver.inTransaction) driver.exec("ROLLBACK");
    throw error;
  }
}
