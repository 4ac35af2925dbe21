// Test helpers: a small database with every kind of thing an integrity check looks at (a table
// with NOT NULL, CHECK and UNIQUE constraints and an index, an FTS5 index, free pages), and ways to
// damage a copy of it that each leave a different trace.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { openRawSqlite, type RawSqlite } from "../../db/test-support/raw-sqlite.js";

const PAGE_SIZE = 4096;
/** Offset of the big-endian page count in the SQLite file header. */
const HEADER_PAGE_COUNT = 28;
/** Offset, in a b-tree leaf page's header, of its count of fragmented free bytes. */
const PAGE_HEADER_FRAGMENTED_BYTES = 7;

function makeCheckableDatabase(path: string, rows = 3000): void {
  const db = openRawSqlite(path);
  try {
    db.exec(`
      CREATE TABLE t (
        id INTEGER PRIMARY KEY,
        a INTEGER NOT NULL CHECK (a >= 0),
        b TEXT UNIQUE
      );
      CREATE INDEX t_a ON t (a);
      CREATE VIRTUAL TABLE f USING fts5 (text, content = '', contentless_delete = 1);
      CREATE TABLE u (id INTEGER PRIMARY KEY, a, b);
    `);
    const row = db.prepare("INSERT INTO t (a, b) VALUES (?, ?)");
    const doc = db.prepare("INSERT INTO f (rowid, text) VALUES (?, ?)");
    const other = db.prepare("INSERT INTO u (a, b) VALUES (?, ?)");
    db.exec("BEGIN");
    for (let i = 0; i < rows; i++) {
      row.run(i, `word${i} ${"x".repeat(i % 50)}`);
      doc.run(i + 1, `alpha beta gamma${i % 97} delta${i}`);
      other.run(i, "y".repeat(i % 200));
    }
    db.exec("COMMIT");
    // Free pages, so that the freelist is part of what is checked.
    db.exec("DELETE FROM u WHERE id % 3 = 0 OR id > 2000");
  } finally {
    db.close();
  }
}

/**
 * One checkable database shared by a test file: made before its tests, removed after them.
 * Returns its path (valid once the tests run); tests damage copies of it, never the file itself.
 */
export function useCheckableDatabase(): () => string {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "agentstate-test-"));
    makeCheckableDatabase(join(dir, "base.sqlite"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return () => join(dir, "base.sqlite");
}

/** Runs `change` on a connection that may write the schema and shadow tables, then closes it. */
function tamper(path: string, change: (db: RawSqlite) => void): void {
  const db = openRawSqlite(path);
  try {
    db.unsafeMode(true); // lifts SQLITE_DBCONFIG_DEFENSIVE, which guards exactly these writes
    change(db);
  } finally {
    db.close();
  }
}

export interface Damage {
  name: string;
  /** What `PRAGMA integrity_check` says about it. */
  expected: RegExp;
  /** Which half of a split check sees it (see CheckPart). */
  seenBy: "tables" | "fulltext";
  apply(path: string): void;
}

export const DAMAGES: readonly Damage[] = [
  {
    name: "an index whose entries do not match its definition",
    expected: /row \d+ missing from index t_a/,
    seenBy: "tables",
    apply: (path) =>
      tamper(path, (db) => {
        db.pragma("writable_schema = ON");
        db.prepare(
          "UPDATE sqlite_schema SET sql = 'CREATE INDEX t_a ON t (b)' WHERE name = 't_a'",
        ).run();
      }),
  },
  {
    name: "a row that breaks a CHECK constraint",
    expected: /CHECK constraint failed in t/,
    seenBy: "tables",
    apply: (path) =>
      tamper(path, (db) => {
        db.pragma("ignore_check_constraints = ON");
        db.prepare("INSERT INTO t (a, b) VALUES (-5, 'negative')").run();
      }),
  },
  {
    name: "a page that no b-tree uses",
    expected: /Page \d+: never used/,
    seenBy: "tables",
    apply: (path) => {
      const file = readFileSync(path);
      const grown = Buffer.concat([file, Buffer.alloc(PAGE_SIZE)]);
      grown.writeUInt32BE(file.readUInt32BE(HEADER_PAGE_COUNT) + 1, HEADER_PAGE_COUNT);
      writeFileSync(path, grown);
    },
  },
  {
    // Each table alone looks sound (u's columns take any value); only the accounting of the whole
    // file's pages shows that one b-tree is read as two tables and that u's own pages are unused.
    name: "two tables reading one b-tree",
    expected: /2nd reference to page \d+/,
    seenBy: "tables",
    apply: (path) =>
      tamper(path, (db) => {
        db.pragma("writable_schema = ON");
        db.prepare(
          "UPDATE sqlite_schema SET rootpage = (SELECT rootpage FROM sqlite_schema WHERE name = 't') WHERE name = 'u'",
        ).run();
      }),
  },
  {
    // The inverted index still reads back, so FTS5's own check finds nothing: this is the b-tree
    // check of its shadow table, which a split check runs with the ordinary tables.
    name: "a miscounted page of the full-text index's shadow table",
    expected: /Fragmentation of 0 bytes reported as 9 on page \d+/,
    seenBy: "tables",
    apply: (path) => {
      const db = openRawSqlite(path, { readonly: true });
      const page = db
        .prepare("SELECT pageno FROM dbstat WHERE name = 'f_data' AND pagetype = 'leaf' LIMIT 1")
        .pluck()
        .get() as number;
      db.close();
      const file = readFileSync(path);
      file[(page - 1) * PAGE_SIZE + PAGE_HEADER_FRAGMENTED_BYTES] = 9;
      writeFileSync(path, file);
    },
  },
  {
    name: "a zeroed block of the full-text index",
    expected: /fts5: corruption found/,
    seenBy: "fulltext",
    apply: (path) =>
      tamper(path, (db) => {
        db.prepare(
          "UPDATE f_data SET block = zeroblob(length(block)) WHERE id = (SELECT max(id) FROM f_data WHERE length(block) > 100)",
        ).run();
      }),
  },
];

/** A copy of `base` at `path` with `damage` done to it. */
export function damagedCopy(base: string, path: string, damage: Damage): string {
  copyFileSync(base, path);
  damage.apply(path);
  return path;
}
