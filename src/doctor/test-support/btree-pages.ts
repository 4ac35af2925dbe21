// Test oracle: reads rowids straight out of a SQLite file's table b-tree leaf pages, by the file
// format, without SQLite, so a test knows which rows a damaged page held.
import { openRawSqlite } from "../../db/test-support/raw-sqlite.js";

function varint(buf: Buffer, at: number): [number, number] {
  let value = 0n;
  for (let i = 0; i < 8; i++) {
    const byte = buf[at + i] as number;
    value = (value << 7n) | BigInt(byte & 0x7f);
    if ((byte & 0x80) === 0) return [Number(value), at + i + 1];
  }
  value = (value << 8n) | BigInt(buf[at + 8] as number);
  return [Number(value), at + 9];
}

/** The rowids stored in leaf page `pageno` (1-based) of a table b-tree. */
export function rowidsOnLeafPage(file: Buffer, pageno: number, pageSize = 4096): number[] {
  const base = (pageno - 1) * pageSize;
  const header = base + (pageno === 1 ? 100 : 0);
  if (file[header] !== 0x0d) throw new Error(`page ${pageno} is not a table leaf page`);
  const cells = file.readUInt16BE(header + 3);
  const rowids: number[] = [];
  for (let i = 0; i < cells; i++) {
    const cell = base + file.readUInt16BE(header + 8 + 2 * i);
    const [, afterLength] = varint(file, cell);
    rowids.push(varint(file, afterLength)[0]);
  }
  return rowids;
}

/** Page numbers of a table's b-tree, by kind, in key order (SQLite's dbstat). */
export function pagesOf(path: string, table: string): { leaves: number[]; interior: number[] } {
  const db = openRawSqlite(path, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT pageno, pagetype FROM dbstat WHERE name = ? ORDER BY path")
      .all(table) as Array<{ pageno: number; pagetype: string }>;
    return {
      leaves: rows.filter((r) => r.pagetype === "leaf").map((r) => r.pageno),
      interior: rows.filter((r) => r.pagetype === "internal").map((r) => r.pageno),
    };
  } finally {
    db.close();
  }
}
