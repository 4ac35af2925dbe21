import type { Database } from "../db/database.js";
import type { DatabaseRole } from "../db/schema.js";
import type { StateHome } from "../home.js";

export interface DatabaseStatus {
  role: DatabaseRole;
  agentId: string | null;
  path: string;
  bytes: number;
  schemaVersion: number;
  /** `"ok"`, or the problems `PRAGMA quick_check` found, joined. */
  quickCheck: string;
  /** Rows per table, by table name (FTS shadow tables left out). */
  tables: Record<string, number>;
}

export interface HomeStatus {
  home: string;
  databases: DatabaseStatus[];
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function countRows(db: Database): Record<string, number> {
  const tables = db
    .prepare<{ name: string; sql: string | null }>(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .all();
  const virtual = tables
    .filter((t) => /^\s*CREATE\s+VIRTUAL\s+TABLE/i.test(t.sql ?? ""))
    .map((t) => `${t.name}_`);
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    if (virtual.some((prefix) => name.startsWith(prefix))) continue;
    const row = db.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${quoteIdent(name)}`).get();
    counts[name] = row?.n ?? 0;
  }
  return counts;
}

function describeDatabase(db: Database, agentId: string | null): DatabaseStatus {
  return {
    role: db.role,
    agentId,
    path: db.path,
    bytes: db.sizeBytes(),
    schemaVersion: db.schemaVersion,
    quickCheck: db.quickCheck().join("; "),
    tables: countRows(db),
  };
}

/** What a home holds: every database with its role, size, schema, health and row counts. */
export function describeHome(home: StateHome): HomeStatus {
  const databases = [describeDatabase(home.db, null)];
  for (const agent of home.listAgents()) {
    databases.push(
      describeDatabase(home.agent(agent.agentId, { create: false }).db, agent.agentId),
    );
  }
  return { home: home.path, databases };
}
