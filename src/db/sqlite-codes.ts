/** SQLite's primary result codes, by number (sqlite3.h). */
const PRIMARY = [
  "OK",
  "ERROR",
  "INTERNAL",
  "PERM",
  "ABORT",
  "BUSY",
  "LOCKED",
  "NOMEM",
  "READONLY",
  "INTERRUPT",
  "IOERR",
  "CORRUPT",
  "NOTFOUND",
  "FULL",
  "CANTOPEN",
  "PROTOCOL",
  "EMPTY",
  "SCHEMA",
  "TOOBIG",
  "CONSTRAINT",
  "MISMATCH",
  "MISUSE",
  "NOLFS",
  "AUTH",
  "FORMAT",
  "RANGE",
  "NOTADB",
  "NOTICE",
  "WARNING",
];

/** SQLITE_CONSTRAINT's extended codes, by their high byte. */
const CONSTRAINT = [
  "",
  "CHECK",
  "COMMITHOOK",
  "FOREIGNKEY",
  "FUNCTION",
  "NOTNULL",
  "PRIMARYKEY",
  "TRIGGER",
  "UNIQUE",
  "VTAB",
  "ROWID",
  "PINNED",
  "DATATYPE",
];

/**
 * `SQLITE_BUSY`, `SQLITE_CONSTRAINT_UNIQUE`, … for a numeric (extended) result code: the names
 * better-sqlite3 puts in `code`, which `wrapSqliteError` maps. Other extended codes keep their
 * primary name, which is all the mapping reads.
 */
export function sqliteCodeName(code: number): string {
  const primary = PRIMARY[code & 0xff] ?? "ERROR";
  const extended = code >> 8;
  if (primary === "CONSTRAINT" && extended > 0 && CONSTRAINT[extended]) {
    return `SQLITE_CONSTRAINT_${CONSTRAINT[extended]}`;
  }
  return `SQLITE_${primary}`;
}
