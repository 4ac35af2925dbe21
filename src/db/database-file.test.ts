import { spawnSync } from "node:child_process";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../test-support/temp-dir.js";
import { openDatabase } from "./database.js";
import { chooseDriver, driverFactory } from "./driver-choice.js";
import { finishLayoutUpgrade } from "./layout-upgrade.js";
import { type DatabaseRole, migrate } from "./schema.js";
import { openRawSqlite } from "./test-support/raw-sqlite.js";

const tempDir = useTempDirs();

/** What a database holds: pragmas, schema, and every row (the migrations' times left out). */
function contents(path: string) {
  const raw = openRawSqlite(path, { readonly: true });
  try {
    const pragma = (name: string) => raw.pragma(name, { simple: true });
    const schema = raw
      .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name")
      .all() as { type: string; name: string; sql: string | null }[];
    const rows: Record<string, unknown[]> = {};
    for (const { type, name } of schema) {
      if (type !== "table" || name.startsWith("sqlite_")) continue;
      const columns = name === "schema_migrations" ? "version, name, sha256" : "*";
      rows[name] = raw.prepare(`SELECT ${columns} FROM "${name}" ORDER BY 1`).all();
    }
    return {
      pragmas: ["user_version", "auto_vacuum", "journal_mode", "page_size"].map(pragma),
      integrity: pragma("integrity_check"),
      schema,
      rows,
    };
  } finally {
    raw.close();
  }
}

/** The reference: the migrations run by hand on an empty file, as a new database gets them. */
function migrated(path: string, role: DatabaseRole) {
  const driver = driverFactory(chooseDriver())(path, {});
  try {
    driver.exec("PRAGMA auto_vacuum = INCREMENTAL");
    driver.exec("PRAGMA journal_mode = WAL");
    migrate(driver, role);
    if (role === "agent") {
      finishLayoutUpgrade(driver);
      // All the move of cold search rows to their own file (agent/0017) does with none to move.
      driver.exec("DROP TABLE cold_fts");
    }
  } finally {
    driver.close();
  }
  return contents(path);
}

describe("new database files", () => {
  it.each(["agent", "global"] as const)(
    "a new %s database, the first of the process or a copy of it, is the migrations' database, 0600",
    (role) => {
      const dir = tempDir();
      const reference = migrated(join(dir, "reference.sqlite"), role);
      expect(reference.pragmas).toEqual([reference.pragmas[0], 2, "wal", 4096]);
      for (const name of ["first.sqlite", "second.sqlite", "third.sqlite"]) {
        const path = join(dir, name);
        openDatabase({ path, role }).close();
        expect(contents(path)).toEqual(reference);
        expect(statSync(path).mode & 0o777).toBe(0o600);
      }
    },
  );

  it("removes the drafts a killed process left beside a new file, never a live process's", () => {
    const dir = tempDir();
    const dead = spawnSync(process.execPath, ["-e", ""]).pid as number;
    const left = [
      `agent.sqlite.new-${dead}-0-0a1b2c3d`,
      `agent.sqlite.new-${dead}-0-0a1b2c3d-journal`,
    ];
    const live = `agent.sqlite.new-${process.pid}-7-0a1b2c3d`;
    for (const name of [...left, live]) writeFileSync(join(dir, name), "draft");
    openDatabase({ path: join(dir, "agent.sqlite"), role: "agent" }).close();
    expect(readdirSync(dir).sort()).toEqual(["agent.sqlite", live].sort());
  });
});
