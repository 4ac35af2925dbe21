import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_COLUMNS, AGENT_DATABASE_COLUMNS } from "../home.js";
import { SESSION_ENTRY_COLUMNS } from "../stores/agent/session-store.js";
import {
  EVENT_COLUMNS,
  IDENTITY_COLUMNS,
  SESSION_COLUMNS,
  SNAPSHOT_COLUMNS,
} from "../stores/agent/transcript-rows.js";
import { KV_COLUMNS } from "../stores/kv-store.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { type Database, openDatabase } from "./database.js";
import { isStateError } from "./errors.js";
import { type DatabaseRole, latestSchemaVersion, loadMigrations } from "./schema.js";

const tempDir = useTempDirs();

function columnsOfTable(db: Database, table: string): string[] {
  return db
    .prepare<{ name: string }>(`SELECT name FROM pragma_table_info('${table}') ORDER BY cid`)
    .all()
    .map((row) => row.name);
}

/** Row types declared in TypeScript, by role and table, checked against the committed .sql. */
const DECLARED: Record<DatabaseRole, Record<string, readonly string[]>> = {
  global: { kv: KV_COLUMNS, agents: AGENT_COLUMNS, agent_databases: AGENT_DATABASE_COLUMNS },
  agent: {
    kv: KV_COLUMNS,
    session_entries: SESSION_ENTRY_COLUMNS,
    sessions: SESSION_COLUMNS,
    transcript_events: EVENT_COLUMNS,
    transcript_event_identities: IDENTITY_COLUMNS,
    transcript_snapshots: SNAPSHOT_COLUMNS,
  },
};

describe("schema migrations", () => {
  for (const role of ["global", "agent"] as const) {
    it(`${role}: numbered files apply in order and are recorded with their SHA-256`, () => {
      const migrations = loadMigrations(role);
      expect(migrations.length).toBe(latestSchemaVersion(role));
      expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1));
      const db = openDatabase({ path: join(tempDir(), `${role}.sqlite`), role });
      const recorded = db
        .prepare<{ version: number; sha256: string }>(
          "SELECT version, sha256 FROM schema_migrations ORDER BY version",
        )
        .all();
      expect(recorded).toEqual(
        migrations.map((m) => ({
          version: m.version,
          sha256: createHash("sha256").update(m.sql).digest("hex"),
        })),
      );
      expect(db.schemaVersion).toBe(migrations.length);
      db.close();
    });

    it(`${role}: TypeScript row types name exactly the columns of their tables`, () => {
      const db = openDatabase({ path: join(tempDir(), `${role}.sqlite`), role });
      for (const [table, declared] of Object.entries(DECLARED[role])) {
        expect(columnsOfTable(db, table), table).toEqual([...declared]);
      }
      db.close();
    });
  }

  it("refuses a database whose recorded migration differs from the shipped file", () => {
    const path = join(tempDir(), "edited.sqlite");
    const db = openDatabase({ path, role: "agent" });
    db.prepare("UPDATE schema_migrations SET sha256 = 'edited' WHERE version = 1").run();
    db.close();
    try {
      openDatabase({ path, role: "agent" });
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_SCHEMA_MISMATCH")).toBe(true);
      expect(String((error as Error).message)).toContain(path);
    }
  });

  it("applies the schema once when many connections open a new file together", async () => {
    const path = join(tempDir(), "race.sqlite");
    const handles = Array.from({ length: 8 }, () => openDatabase({ path, role: "global" }));
    const rows = handles[0]?.prepare("SELECT count(*) AS n FROM schema_migrations").get();
    expect(rows).toEqual({ n: latestSchemaVersion("global") });
    for (const handle of handles) handle.close();
  });
});
