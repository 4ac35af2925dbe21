import { copyFileSync, existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { clearDamaged } from "../db/damage-marker.js";
import { type Database, openDatabase } from "../db/database.js";
import type { SqlDriver } from "../db/driver.js";
import { chooseDriver, driverFactory } from "../db/driver-choice.js";
import { isStateError, StateError } from "../db/errors.js";
import { ensurePrivateDir } from "../db/files.js";
import type { DatabaseRole } from "../db/schema.js";
import { hasSqliteHeader, PAGE_SIZES, writeWithHeader } from "./header-repair.js";
import { salvageTable, type TableToSalvage } from "./salvage-rows.js";
import { rebuildSearchIndexes } from "./salvage-search.js";

export interface TableSalvageReport {
  table: string;
  recovered: number;
  /** Rows the damaged file still counted but that could not be read; "unknown" if it could not count. */
  lost: number | "unknown";
}

export interface SalvageReport {
  path: string;
  role: DatabaseRole;
  /** Where the damaged file (and its -wal) was kept, untouched. */
  keptAt: string;
  tables: TableSalvageReport[];
  recovered: number;
  /** `quick_check` of the new database. */
  check: string[];
}

const RECOVERY = { fileMustExist: true, recovery: true } as const;
const SKIPPED_TABLES = new Set(["schema_migrations"]);

/** Opens a working copy of the damaged file, rebuilding its header first when that is gone. */
function openSource(path: string, work: string): SqlDriver {
  const copy = join(work, "source.sqlite");
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
  const bytes = readFileSync(path);
  if (hasSqliteHeader(bytes)) {
    copyFileSync(path, copy);
    return driverFactory(chooseDriver())(copy, RECOVERY);
  }
  for (const pageSize of PAGE_SIZES) {
    writeWithHeader(bytes, copy, pageSize);
    const driver = driverFactory(chooseDriver())(copy, RECOVERY);
    try {
      driver.prepare("SELECT count(*) FROM sqlite_schema").get();
      return driver;
    } catch {
      driver.close();
    }
  }
  writeWithHeader(bytes, copy, PAGE_SIZES[0]);
  return driverFactory(chooseDriver())(copy, RECOVERY);
}

function columnsOf(
  db: Pick<SqlDriver, "prepare">,
  table: string,
): Array<{ name: string; type: string; pk: number }> {
  try {
    return db
      .prepare<{ name: string; type: string; pk: number }>(
        `SELECT name, type, pk FROM pragma_table_info(?)`,
      )
      .all(table);
  } catch (error) {
    if (isStateError(error, "E_CORRUPT") || isStateError(error, "E_NOT_A_DATABASE")) return [];
    throw error;
  }
}

/** The new database's tables worth copying: not SQLite's, not the migration ledger, no FTS index. */
function tablesToSalvage(source: SqlDriver, target: Database): TableToSalvage[] {
  const rows = target
    .prepare<{ name: string; sql: string }>(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .all();
  const virtual = rows.filter((r) => /^CREATE VIRTUAL TABLE/i.test(r.sql)).map((r) => r.name);
  const derived = (name: string) => virtual.some((v) => name === v || name.startsWith(`${v}_`));
  return rows
    .filter((r) => !SKIPPED_TABLES.has(r.name) && !derived(r.name))
    .map((r) => {
      const columns = columnsOf(target, r.name);
      const present = new Set(columnsOf(source, r.name).map((c) => c.name));
      const keys = columns.filter((c) => c.pk > 0);
      return {
        name: r.name,
        columns: columns.map((c) => c.name).filter((c) => present.size === 0 || present.has(c)),
        withoutRowid: /WITHOUT\s+ROWID/i.test(r.sql),
        rowidAlias: keys.length === 1 && keys[0]?.type.toUpperCase() === "INTEGER",
      };
    });
}

function moveAside(path: string, keptAt: string): void {
  renameSync(path, keptAt);
  for (const suffix of ["-wal", "-shm"]) {
    if (existsSync(`${path}${suffix}`)) renameSync(`${path}${suffix}`, `${keptAt}${suffix}`);
  }
}

/** A time as it goes into a file name: `2025-01-31T12-00-00-000Z`. */
export function stamp(now: number): string {
  return new Date(now).toISOString().replace(/[:.]/g, "-");
}

/**
 * Salvages a damaged database: reads every table's readable rows from a copy of it into a new
 * database of the same role, keeps the damaged file beside it (renamed, never deleted), puts the
 * new one in its place and lifts the quarantine. Nothing is ever replaced by an empty file: the
 * new database holds every row that could be read.
 */
export function salvageDatabase(path: string, role: DatabaseRole, now = Date.now()): SalvageReport {
  if (!existsSync(path)) {
    throw new StateError("E_NOT_FOUND", `no database at ${path}`, { details: { path } });
  }
  const work = join(dirname(path), `.salvage-${basename(path)}-${process.pid}`);
  const draft = join(work, "salvaged.sqlite");
  rmSync(work, { recursive: true, force: true });
  ensurePrivateDir(work);
  try {
    const source = openSource(path, work);
    let tables: TableSalvageReport[];
    let check: string[];
    try {
      const target = openDatabase({ path: draft, role });
      try {
        target.exec("PRAGMA foreign_keys = OFF");
        tables = target.tx(() =>
          tablesToSalvage(source, target).map((table) => {
            const got = salvageTable(source, target, table);
            const lost = got.known === null ? "unknown" : Math.max(0, got.known - got.recovered);
            return { table: got.table, recovered: got.recovered, lost };
          }),
        );
        if (role === "agent") target.tx(() => rebuildSearchIndexes(target));
        check = target.quickCheck();
      } finally {
        target.close();
      }
    } finally {
      source.close();
    }
    const keptAt = `${path}.damaged-${stamp(now)}`;
    moveAside(path, keptAt);
    renameSync(draft, path);
    clearDamaged(path);
    const recovered = tables.reduce((sum, t) => sum + t.recovered, 0);
    return { path, role, keptAt, tables, recovered, check };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
