import { StateError } from "../db/errors.js";
import { type ByteSource, toBuffer, VFS_CHUNK_BYTES } from "./chunks.js";

/**
 * A small streaming tar codec (POSIX ustar, with pax `path` records for long names) for VFS
 * export and import. Pull-based on both sides, so a 100 MB member flows chunk by chunk between
 * the VFS and the stream with bounded memory. Only files and directories exist in the VFS: link
 * and device members are refused on read, never materialized.
 */

const BLOCK = 512;
const ZERO_BLOCK = Buffer.alloc(BLOCK);
const MAX_OCTAL_SIZE = 8 ** 11 - 1;
const MAX_EXTENDED_HEADER = 1024 * 1024;

export interface TarMemberOut {
  /** Relative name without a leading `/`; directories without a trailing `/` (added here). */
  name: string;
  kind: "file" | "directory";
  size: number;
  mtimeMs: number;
  /** The file's bytes; exactly `size` of them. */
  body?: () => Iterable<Uint8Array> | AsyncIterable<Uint8Array>;
}

export interface TarMemberIn {
  /** The member name as stored (pax `path` or ustar prefix + name), not yet normalized. */
  name: string;
  kind: "file" | "directory";
  size: number;
  /** The member's bytes; read them before asking for the next member (the rest is skipped). */
  body: AsyncIterable<Buffer>;
}

function corrupt(reason: string): StateError {
  return new StateError("E_CORRUPT_SOURCE", `tar archive: ${reason}`, { details: { reason } });
}

function writeOctal(block: Buffer, value: number, offset: number, length: number): void {
  block.write(`${value.toString(8).padStart(length - 1, "0")}\0`, offset, length, "ascii");
}

/** The longest prefix of `text` that fits in `bytes` bytes of UTF-8 without splitting a char. */
function fitUtf8(text: string, bytes: number): string {
  let out = "";
  for (const char of text) {
    if (Buffer.byteLength(out + char) > bytes) break;
    out += char;
  }
  return out;
}

function header(name: string, type: string, size: number, mtimeMs: number, mode: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(fitUtf8(name, 100), 0, 100, "utf8");
  writeOctal(block, mode, 100, 8);
  writeOctal(block, 0, 108, 8);
  writeOctal(block, 0, 116, 8);
  writeOctal(block, size, 124, 12);
  writeOctal(block, Math.floor(mtimeMs / 1000), 136, 12);
  block.fill(0x20, 148, 156);
  block.write(type, 156, 1, "ascii");
  block.write("ustar\u000000", 257, 8, "ascii");
  let sum = 0;
  for (const byte of block) sum += byte;
  writeOctal(block, sum, 148, 7);
  return block;
}

/** One pax record, `"<length> key=value\n"`, whose length counts its own digits. */
function paxRecord(key: string, value: string): Buffer {
  const rest = Buffer.byteLength(` ${key}=${value}\n`);
  let length = rest + String(rest).length;
  if (String(length).length !== String(rest).length) length = rest + String(length).length;
  return Buffer.from(`${length} ${key}=${value}\n`, "utf8");
}

function padding(size: number): Buffer {
  return ZERO_BLOCK.subarray(0, (BLOCK - (size % BLOCK)) % BLOCK);
}

async function* memberBytes(member: TarMemberOut): AsyncGenerator<Buffer> {
  const name = member.kind === "directory" ? `${member.name}/` : member.name;
  const size = member.kind === "file" ? member.size : 0;
  if (size > MAX_OCTAL_SIZE) throw new TypeError(`Expected a tar member of at most 8 GiB: ${name}`);
  if (Buffer.byteLength(name) > 100) {
    const pax = paxRecord("path", name);
    yield header(`PaxHeader/${fitUtf8(name, 80)}`, "x", pax.length, member.mtimeMs, 0o600);
    yield Buffer.concat([pax, padding(pax.length)]);
  }
  const type = member.kind === "directory" ? "5" : "0";
  yield header(name, type, size, member.mtimeMs, member.kind === "directory" ? 0o700 : 0o600);
  if (member.kind === "directory") return;
  let written = 0;
  for await (const chunk of member.body?.() ?? []) {
    written += chunk.length;
    if (written > size) break;
    yield toBuffer(chunk);
  }
  if (written !== size) {
    throw new StateError("E_CONFLICT", `tar export: ${name} changed size while being archived`, {
      details: { name, expected: size, written },
    });
  }
  yield padding(size);
}

/** Encodes members as a tar stream, ending with the two zero blocks. */
export async function* encodeTar(
  members: Iterable<TarMemberOut> | AsyncIterable<TarMemberOut>,
): AsyncGenerator<Buffer> {
  for await (const member of members) yield* memberBytes(member);
  yield Buffer.alloc(BLOCK * 2);
}

/** Pulls exact byte counts out of a stream of pieces of any size. */
class ByteReader {
  private readonly pending: Buffer[] = [];
  private available = 0;
  private done = false;
  private readonly source: AsyncIterator<Uint8Array | string>;

  constructor(source: ByteSource) {
    this.source = (source as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]
      ? (source as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]()
      : (async function* () {
          yield* source as Iterable<Uint8Array | string>;
        })();
  }

  /** Exactly `n` bytes; undefined at a clean end of input; E_CORRUPT_SOURCE when cut short. */
  async exact(n: number): Promise<Buffer | undefined> {
    await this.fill(n);
    if (this.available === 0) return undefined;
    if (this.available < n) throw corrupt("the archive ends in the middle of a block");
    const pieces: Buffer[] = [];
    for (let need = n; need > 0; ) {
      const piece = this.take(need);
      pieces.push(piece);
      need -= piece.length;
    }
    return pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces);
  }

  /** Between 1 and `max` bytes, as they arrived (no copy). */
  async some(max: number): Promise<Buffer> {
    await this.fill(1);
    if (this.available === 0) throw corrupt("the archive ends in the middle of a member");
    return this.take(max);
  }

  private take(max: number): Buffer {
    const first = this.pending[0] as Buffer;
    const piece = first.subarray(0, max);
    if (piece.length === first.length) this.pending.shift();
    else this.pending[0] = first.subarray(piece.length);
    this.available -= piece.length;
    return piece;
  }

  private async fill(n: number): Promise<void> {
    while (this.available < n && !this.done) {
      const next = await this.source.next();
      if (next.done) this.done = true;
      else {
        const piece = toBuffer(next.value);
        if (piece.length > 0) this.pending.push(piece);
        this.available += piece.length;
      }
    }
  }
}

function readOctal(block: Buffer, offset: number, length: number, what: string): number {
  if ((block[offset] as number) & 0x80) throw corrupt(`${what} uses base-256 (over 8 GiB)`);
  const text = block
    .toString("ascii", offset, offset + length)
    .replace(/[\0 ]+$/, "")
    .trim();
  if (!/^[0-7]*$/.test(text))
    throw corrupt(`${what} is not an octal number: ${JSON.stringify(text)}`);
  return text === "" ? 0 : Number.parseInt(text, 8);
}

function cString(block: Buffer, offset: number, length: number): string {
  const end = block.indexOf(0, offset);
  return block.toString(
    "utf8",
    offset,
    end === -1 || end > offset + length ? offset + length : end,
  );
}

function checkHeader(block: Buffer, at: number): void {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (block[i] as number);
  if (readOctal(block, 148, 8, "checksum") !== sum) {
    throw corrupt(`header checksum mismatch at byte ${at}`);
  }
}

function ustarName(block: Buffer): string {
  const name = cString(block, 0, 100);
  const prefix = block.toString("ascii", 257, 262) === "ustar" ? cString(block, 345, 155) : "";
  return prefix === "" ? name : `${prefix}/${name}`;
}

/** The `path` of a pax extended header; other keys (mtime, uid …) do not exist in the VFS. */
function paxPath(data: Buffer): string | undefined {
  let path: string | undefined;
  for (let offset = 0; offset < data.length; ) {
    const space = data.indexOf(0x20, offset);
    const length = Number.parseInt(data.toString("ascii", offset, space), 10);
    if (space === -1 || !(length > 0)) throw corrupt("malformed pax extended header");
    const record = data.toString("utf8", space + 1, offset + length - 1);
    const eq = record.indexOf("=");
    if (record.slice(0, eq) === "path") path = record.slice(eq + 1);
    offset += length;
  }
  return path;
}

const LINK_TYPES: Record<string, string> = { "1": "hard link", "2": "symbolic link" };

function memberKind(type: string, name: string): "file" | "directory" {
  if (type === "5") return "directory";
  if (type === "0" || type === "7") return "file";
  const link = LINK_TYPES[type];
  if (link) {
    throw new StateError(
      "E_PATH",
      `tar member ${JSON.stringify(name)} is a ${link}; the VFS has no links`,
      {
        details: { path: name, type },
      },
    );
  }
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `tar member ${JSON.stringify(name)} has type ${JSON.stringify(type)}; only files and directories can be imported`,
    { details: { path: name, type } },
  );
}

async function skip(reader: ByteReader, bytes: number): Promise<void> {
  let left = bytes;
  while (left > 0) left -= (await reader.some(left)).length;
}

/** A member's bytes, pulled from the archive as the consumer asks; `left` is what it did not read. */
class MemberBody implements AsyncIterable<Buffer> {
  constructor(
    private readonly reader: ByteReader,
    public left: number,
  ) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    while (this.left > 0) {
      const piece = await this.reader.some(Math.min(this.left, VFS_CHUNK_BYTES));
      this.left -= piece.length;
      yield piece;
    }
  }
}

/**
 * Decodes a tar stream member by member. A member's body must be read before the next member is
 * requested; whatever it leaves unread is skipped. Links are refused (E_PATH), as are devices and
 * FIFOs (E_INVALID_ARGUMENT): the VFS has only files and directories.
 */
export async function* decodeTar(source: ByteSource): AsyncGenerator<TarMemberIn> {
  const reader = new ByteReader(source);
  let longName: string | undefined;
  for (let at = 0; ; ) {
    const block = await reader.exact(BLOCK);
    if (!block || block.equals(ZERO_BLOCK)) return;
    checkHeader(block, at);
    const type = block[156] === 0 ? "0" : String.fromCharCode(block[156] as number);
    const size = readOctal(block, 124, 12, "size");
    at += BLOCK + size + padding(size).length;
    if (type === "x" || type === "L" || type === "g") {
      // Extended headers are buffered whole: a huge one is an attack, not a name.
      if (size > MAX_EXTENDED_HEADER) throw corrupt(`an extended header of ${size} bytes`);
      const data = size === 0 ? Buffer.alloc(0) : await reader.exact(size);
      if (!data) throw corrupt("the archive ends inside an extended header");
      await skip(reader, padding(size).length);
      if (type === "x") longName = paxPath(data) ?? longName;
      if (type === "L") longName = cString(data, 0, data.length);
      continue;
    }
    const name = longName ?? ustarName(block);
    longName = undefined;
    const kind = memberKind(type, name);
    const body = new MemberBody(reader, size);
    yield { name, kind, size: kind === "file" ? size : 0, body };
    await skip(reader, body.left + padding(size).length);
  }
}
