import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { listDir, type WalPosition } from "./replica-layout.js";

/** The last commit in a database's WAL: its WAL's salt and where its last frame ends. */
export interface LocalCommit {
  salt: string;
  end: number;
}

/**
 * Reads the last commit from the WAL index (`-shm`): its header holds the frame count of the
 * committed WAL (`mxFrame`), the page size and the WAL's salt, so the position is known without
 * reading the WAL. Use it in the writing process, after the commit.
 *
 * One descriptor, opened on the first read and kept: closing any descriptor of a file drops every
 * POSIX lock the process holds on it, SQLite's locks on the -shm included, and another process
 * (Litestream) opening the database then takes itself for the first and rebuilds the index under
 * this process's mapping of it. `close` only once no connection of the process has the database
 * open.
 */
export class WalIndexReader {
  private fd: number | undefined;
  private readonly buffer = Buffer.alloc(48);

  constructor(readonly dbPath: string) {}

  lastCommit(): LocalCommit {
    this.fd ??= openSync(`${this.dbPath}-shm`, "r");
    const read = readSync(this.fd, this.buffer, 0, 48, 0);
    const view = new DataView(this.buffer.buffer, this.buffer.byteOffset, read);
    const rawPage = view.getUint16(14, true);
    const pageSize = rawPage === 1 ? 65_536 : rawPage;
    const frames = view.getUint32(16, true);
    return { salt: hex(this.buffer.subarray(32, 40)), end: 32 + frames * (pageSize + 24) };
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Litestream 0.3 keeps its shadow WAL beside the database, in `.<name>-litestream/`. */
export function shadowDir(dbPath: string): string {
  return join(dirname(dbPath), `.${basename(dbPath)}-litestream`);
}

/**
 * Where Litestream's current generation holds `commit`: the shadow WAL (a byte copy of each WAL
 * Litestream read, one file per WAL index) whose header carries the commit's salt. Undefined
 * until Litestream has read that WAL. When it has read past it (the WAL started over since),
 * the first index with the current salt stands for it: the restart needed Litestream's read of
 * every earlier frame first.
 */
export function shadowTarget(
  walIndex: WalIndexReader,
  commit: LocalCommit,
): WalPosition | undefined {
  const { dbPath } = walIndex;
  const dir = shadowDir(dbPath);
  let generation: string;
  try {
    generation = readFileSync(join(dir, "generation"), "utf8").trim();
  } catch {
    return undefined;
  }
  const salts = new Map<string, number>();
  const walDir = join(dir, "generations", generation, "wal");
  for (const file of listDir(walDir)) {
    const match = /^([0-9a-f]{8})\.wal$/.exec(file);
    if (!match) continue;
    const salt = readSalt(join(walDir, file));
    if (salt !== undefined) salts.set(salt, Number.parseInt(match[1] as string, 16));
  }
  const index = salts.get(commit.salt);
  if (index !== undefined) return { generation, index, offset: commit.end };
  const current = walIndex.lastCommit().salt;
  const next = current === commit.salt ? undefined : salts.get(current);
  return next === undefined ? undefined : { generation, index: next, offset: 32 };
}

export function reached(position: WalPosition | undefined, target: WalPosition): boolean {
  if (position === undefined || position.generation !== target.generation) return false;
  return (
    position.index > target.index ||
    (position.index === target.index && position.offset >= target.offset)
  );
}

function readSalt(path: string): string | undefined {
  try {
    const header = readBytes(path, 16, 8);
    return header.byteLength === 8 ? hex(header) : undefined;
  } catch {
    return undefined;
  }
}

function readBytes(path: string, position: number, length: number): Uint8Array {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(length);
    const read = readSync(fd, buffer, 0, length, position);
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}
