import { readFileSync, writeFileSync } from "node:fs";

const MAGIC = Buffer.from("SQLite format 3\0", "latin1");
const HEADER_BYTES = 100;

/** Whether the first bytes still say "SQLite format 3". */
export function hasSqliteHeader(file: Buffer): boolean {
  return file.length >= HEADER_BYTES && file.subarray(0, MAGIC.length).equals(MAGIC);
}

/**
 * A plausible 100-byte header for a file whose own header was overwritten, assuming `pageSize`:
 * format 4, UTF-8, no reserved bytes, an empty freelist, and a "valid-for" counter that does not
 * match the change counter, so that SQLite takes the page count from the file's size. The b-tree
 * of the schema starts right after the header on page 1 and is left as it was.
 */
export function rebuiltHeader(pageSize: number): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt16BE(pageSize === 65536 ? 1 : pageSize, 16);
  header[18] = 1; // rollback journal: a WAL flag would send SQLite looking for a -wal
  header[19] = 1;
  header[21] = 64;
  header[22] = 32;
  header[23] = 32;
  header.writeUInt32BE(1, 24); // change counter
  header.writeUInt32BE(1, 40); // schema cookie
  header.writeUInt32BE(4, 44); // schema format
  header.writeUInt32BE(1, 56); // UTF-8
  header.writeUInt32BE(0, 92); // valid-for != change counter: page count comes from the size
  header.writeUInt32BE(3_040_001, 96);
  return header;
}

/** Writes a copy of `file` at `to` with its header rebuilt for `pageSize`. */
export function writeWithHeader(file: Buffer, to: string, pageSize: number): void {
  const copy = Buffer.from(file);
  rebuiltHeader(pageSize).copy(copy, 0);
  writeFileSync(to, copy);
}

/** Page sizes to try, the one agentstate's databases use first. */
export const PAGE_SIZES = [4096, 1024, 2048, 8192, 16384, 32768, 65536, 512] as const;

export function readBytes(path: string): Buffer {
  return readFileSync(path);
}
