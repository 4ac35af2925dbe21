import type { SqlDriver, SqlStatement, SqlValue } from "../db/driver.js";
import { isStateError } from "../db/errors.js";

/** What a table copy got back: rows copied, and how many were known to exist (null: unknown). */
export interface TableSalvage {
  table: string;
  recovered: number;
  /** Rows the damaged file still counted (an intact index answers `count(*)`), else null. */
  known: number | null;
}

/** What a table copy needs of the new database. */
export type Preparer = Pick<SqlDriver, "prepare">;

const BATCH = 500;
const MIN_ROWID = -Number.MAX_SAFE_INTEGER;
const MAX_ROWID = Number.MAX_SAFE_INTEGER;

function isDamage(error: unknown): boolean {
  // A row iterator's errors come from the engine unwrapped.
  const raw = (error as { code?: unknown } | null)?.code;
  if (typeof raw === "string" && /^SQLITE_(CORRUPT|NOTADB|IOERR)/.test(raw)) return true;
  return (
    isStateError(error, "E_CORRUPT") ||
    isStateError(error, "E_NOT_A_DATABASE") ||
    isStateError(error, "E_IO")
  );
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function countOf(source: SqlDriver, table: string): number | null {
  try {
    const row = source.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${quote(table)}`).get();
    return row?.n ?? null;
  } catch (error) {
    if (isDamage(error)) return null;
    throw error;
  }
}

/** A copier of one table's rows from a damaged file into the new database. */
class TableCopy {
  recovered = 0;
  private readonly insert: SqlStatement;

  constructor(
    target: Preparer,
    readonly table: string,
    readonly columns: readonly string[],
    withRowid: boolean,
  ) {
    const names = [...(withRowid ? ["rowid"] : []), ...columns].map(quote);
    this.insert = target.prepare(
      `INSERT OR IGNORE INTO ${quote(table)} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
    );
  }

  putRow(row: Record<string, SqlValue>, explicitRowid: boolean): void {
    const values = this.columns.map((c) => row[c] ?? null);
    this.put(explicitRowid ? [Number(row.__rowid), ...values] : values);
  }

  put(values: SqlValue[]): void {
    try {
      this.recovered += this.insert.run(...values).changes;
    } catch (error) {
      // A damaged row can break a constraint of the new file (a NOT NULL read back as NULL): it is
      // one of the lost rows, not a reason to give up on the others.
      if (!isStateError(error, "E_CONSTRAINT")) throw error;
    }
  }
}

/**
 * Whether reading the first row at or after `rowid` works. A seek into a damaged page fails; one
 * past it lands on the next readable page (or on nothing, the end of the table).
 */
function readableFrom(probe: SqlStatement, rowid: number): boolean {
  try {
    probe.get(rowid);
    return true;
  } catch (error) {
    if (isDamage(error)) return false;
    throw error;
  }
}

/** Rowids probed one by one past a damaged page before the steps start doubling. */
const LINEAR_PROBES = 4096;

/**
 * The first rowid past `failed` from which reading works again. Rowids are dense in agentstate's
 * tables, so the next few thousand are tried one by one: a page holds far fewer rows, and a
 * bigger step could jump over a whole page between two damaged ones. Past that (sparse rowids),
 * steps double, then bisect back.
 */
function skipDamage(probe: SqlStatement, failed: number): number {
  for (let x = failed + 1; x <= failed + LINEAR_PROBES; x++) {
    if (readableFrom(probe, x)) return x;
  }
  let bad = failed + LINEAR_PROBES;
  let step = LINEAR_PROBES;
  let good = Math.min(MAX_ROWID, bad + step);
  while (good < MAX_ROWID && !readableFrom(probe, good)) {
    bad = good;
    step *= 2;
    good = Math.min(MAX_ROWID, bad + step);
  }
  while (good - bad > 1) {
    const mid = bad + Math.floor((good - bad) / 2);
    if (readableFrom(probe, mid)) good = mid;
    else bad = mid;
  }
  return good;
}

/**
 * Reads rows one at a time from rowid `from` on, until the end (done) or a damaged page (`from`
 * is then the first rowid not read).
 */
function copyOneByOne(
  single: SqlStatement<Record<string, SqlValue>>,
  copy: TableCopy,
  explicitRowid: boolean,
  from: number,
): { from: number; done: boolean } {
  for (;;) {
    let row: Record<string, SqlValue> | undefined;
    try {
      row = single.get(from);
    } catch (error) {
      if (!isDamage(error)) throw error;
      return { from, done: false };
    }
    if (row === undefined) return { from, done: true };
    copy.putRow(row, explicitRowid);
    from = Number(row.__rowid) + 1;
  }
}

/**
 * Copies a rowid table in rowid order, a batch at a time; a batch that meets damage is read again
 * row by row up to the damaged page, whose rowid range is then stepped over. Every read seeks
 * `rowid >= from`: a seek for `rowid > last` would land in the page that holds `last`, which may
 * be the damaged one even when the next row's page is whole.
 */
function copyByRowid(source: SqlDriver, copy: TableCopy, explicitRowid: boolean): void {
  const cols = copy.columns.map(quote).join(", ");
  const select = `SELECT rowid AS "__rowid", ${cols} FROM ${quote(copy.table)} WHERE rowid >= ? ORDER BY rowid`;
  const batch = source.prepare<Record<string, SqlValue>>(`${select} LIMIT ${BATCH}`);
  const single = source.prepare<Record<string, SqlValue>>(`${select} LIMIT 1`);
  let from = MIN_ROWID;
  while (from < MAX_ROWID) {
    let rows: Array<Record<string, SqlValue>>;
    try {
      rows = batch.all(from);
    } catch (error) {
      if (!isDamage(error)) throw error;
      const reached = copyOneByOne(single, copy, explicitRowid, from);
      if (reached.done) return;
      from = skipDamage(single, reached.from);
      continue;
    }
    for (const row of rows) {
      copy.putRow(row, explicitRowid);
      from = Number(row.__rowid) + 1;
    }
    if (rows.length < BATCH) return;
  }
}

/** A table without rowids is read in key order until the first damaged page. */
function copyInOrder(source: SqlDriver, copy: TableCopy): void {
  const cols = copy.columns.map(quote).join(", ");
  const rows = source
    .prepare<Record<string, SqlValue>>(`SELECT ${cols} FROM ${quote(copy.table)}`)
    .iterate();
  try {
    for (const row of rows) copy.put(copy.columns.map((c) => row[c] ?? null));
  } catch (error) {
    if (!isDamage(error)) throw error;
  } finally {
    rows.return?.();
  }
}

export interface TableToSalvage {
  name: string;
  columns: readonly string[];
  withoutRowid: boolean;
  /** The table's rowid is one of its columns (INTEGER PRIMARY KEY): it is copied with them. */
  rowidAlias: boolean;
}

/** Copies what is readable of one table from `source` (damaged) into `target` (new, same schema). */
export function salvageTable(
  source: SqlDriver,
  target: Preparer,
  table: TableToSalvage,
): TableSalvage {
  const explicitRowid = !table.withoutRowid && !table.rowidAlias;
  const copy = new TableCopy(target, table.name, table.columns, explicitRowid);
  if (table.withoutRowid) copyInOrder(source, copy);
  else copyByRowid(source, copy, explicitRowid);
  return { table: table.name, recovered: copy.recovered, known: countOf(source, table.name) };
}
