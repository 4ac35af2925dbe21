import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { StateError } from "../db/errors.js";

/**
 * The cold archive of one session: its stored event rows and the blobs they reference, enough to
 * put the hot rows back exactly. Pure: bytes in, bytes out; the file is read through `ReadAt`.
 *
 * Layout, chosen for reads that never inflate more than they return:
 *
 *   [event member]…  gzip members of ~1 MiB of rows each (node:zlib: Node 20 has no zstd)
 *   [blob bytes]…    each blob stored as is: images are compressed already, and a blob is then
 *                    one exact byte range
 *   [index]          a gzip member: JSON with each member's (offset, length, first/last seq, count)
 *                    and each blob's (sha256, mime type, offset, length)
 *   [trailer]        16 bytes: the magic "agscold1" and the index offset (uint64, big-endian)
 *
 * A tail read inflates only the last member(s), a read by seq the one member that holds it. Each
 * member carries gzip's CRC-32, checked by every inflate; the whole file's SHA-256 is kept by the
 * caller and checked after writing.
 */

export const COLD_ARCHIVE_MAGIC = "agscold1";
const TRAILER_BYTES = 16;
/** Uncompressed bytes of rows per gzip member. */
export const COLD_MEMBER_BYTES = 1024 * 1024;
const FORMAT = 1;
/**
 * Level 1: measured on 10 MB of transcript JSON (bench/fixtures.mjs), it deflates 3.5× faster
 * than level 6 for archives 10% larger (4.2× smaller than the JSON instead of 4.65×). A move is
 * bound by its compression and an archive is read rarely, so the speed is worth more.
 */
export const COLD_GZIP_LEVEL = 1;

/** One stored event row, every column but the row id (a restore draws a new one). */
export interface ArchivedEvent {
  seq: number;
  eventId: string;
  eventType: string;
  parentId: string | null;
  idempotencyKey: string | null;
  createdAt: number;
  /** The JSON as stored, blob references included. */
  eventJson: string;
  /** The blobs this row references (its `transcript_blob_refs`). */
  blobRefs: string[];
}

export interface ArchivedBlob {
  sha256: string;
  mimeType: string | null;
  createdAt: number;
  data: Buffer;
}

export interface ArchiveMember {
  offset: number;
  length: number;
  firstSeq: number;
  lastSeq: number;
  events: number;
}

export interface ArchiveBlobEntry {
  sha256: string;
  mimeType: string | null;
  createdAt: number;
  offset: number;
  length: number;
}

export interface ArchiveIndex {
  format: number;
  sessionId: string;
  events: number;
  firstSeq: number;
  lastSeq: number;
  members: ArchiveMember[];
  blobs: ArchiveBlobEntry[];
}

/** An encoded archive: its bytes (as chunks, to write in turn), their SHA-256 and its index. */
export interface EncodedArchive {
  chunks: Buffer[];
  bytes: number;
  sha256: string;
  index: ArchiveIndex;
}

/** Reads `length` bytes at `offset` of the archive. */
export type ReadAt = (offset: number, length: number) => Buffer;

/**
 * A row is a JSON header, a tab, the stored JSON as is, and a newline. The header ends at the
 * first tab (JSON escapes tabs inside strings) and gives the JSON's length, so the JSON is neither
 * escaped again nor searched for its end.
 */
type Header = [number, string, string, string | null, string | null, number, string[], number];

function lineOf(e: ArchivedEvent): string {
  const header: Header = [
    e.seq,
    e.eventId,
    e.eventType,
    e.parentId,
    e.idempotencyKey,
    e.createdAt,
    e.blobRefs,
    e.eventJson.length,
  ];
  return `${JSON.stringify(header)}\t${e.eventJson}\n`;
}

/** The rows of an inflated member. */
function eventsOf(text: string): ArchivedEvent[] {
  const events: ArchivedEvent[] = [];
  for (let at = 0; at < text.length; ) {
    const tab = text.indexOf("\t", at);
    if (tab < 0) throw corrupt("a row without its JSON");
    const [seq, eventId, eventType, parentId, idempotencyKey, createdAt, blobRefs, length] =
      JSON.parse(text.slice(at, tab)) as Header;
    const eventJson = text.slice(tab + 1, tab + 1 + length);
    at = tab + 1 + length;
    if (eventJson.length !== length || text[at] !== "\n") throw corrupt(`row ${seq} is cut short`);
    at++;
    events.push({
      seq,
      eventId,
      eventType,
      parentId,
      idempotencyKey,
      createdAt,
      eventJson,
      blobRefs,
    });
  }
  return events;
}

/** Gzip members of about COLD_MEMBER_BYTES of rows each, appended to `chunks` (empty at first). */
function encodeMembers(
  events: Iterable<ArchivedEvent>,
  chunks: Buffer[],
  level: number,
): ArchiveMember[] {
  const members: ArchiveMember[] = [];
  let offset = 0;
  let lines: string[] = [];
  let pending = { bytes: 0, firstSeq: 0, lastSeq: 0 };
  const flush = () => {
    if (lines.length === 0) return;
    const member = gzipSync(lines.join(""), { level });
    chunks.push(member);
    members.push({ offset, length: member.length, ...pending, events: lines.length });
    offset += member.length;
    lines = [];
  };
  for (const event of events) {
    const line = lineOf(event);
    if (lines.length === 0) pending = { bytes: 0, firstSeq: event.seq, lastSeq: event.seq };
    lines.push(line);
    pending.bytes += line.length;
    pending.lastSeq = event.seq;
    if (pending.bytes >= COLD_MEMBER_BYTES) flush();
  }
  flush();
  return members;
}

/** Builds the archive of `events` (in seq order) and `blobs`. */
export function encodeArchive(
  sessionId: string,
  events: Iterable<ArchivedEvent>,
  blobs: readonly ArchivedBlob[],
  level = COLD_GZIP_LEVEL,
): EncodedArchive {
  const chunks: Buffer[] = [];
  const members = encodeMembers(events, chunks, level);
  let offset = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const blobEntries = blobs.map((blob): ArchiveBlobEntry => {
    const { sha256, mimeType, createdAt, data } = blob;
    chunks.push(data);
    offset += data.length;
    return { sha256, mimeType, createdAt, offset: offset - data.length, length: data.length };
  });
  const index: ArchiveIndex = {
    format: FORMAT,
    sessionId,
    events: members.reduce((sum, m) => sum + m.events, 0),
    firstSeq: members[0]?.firstSeq ?? 0,
    lastSeq: members.at(-1)?.lastSeq ?? 0,
    members,
    blobs: blobEntries,
  };
  const indexBytes = gzipSync(JSON.stringify(index), { level });
  const trailer = Buffer.alloc(TRAILER_BYTES);
  trailer.write(COLD_ARCHIVE_MAGIC, 0, "latin1");
  trailer.writeBigUInt64BE(BigInt(offset), 8);
  chunks.push(indexBytes, trailer);
  const hash = createHash("sha256");
  for (const chunk of chunks) hash.update(chunk);
  return {
    chunks,
    bytes: offset + indexBytes.length + TRAILER_BYTES,
    sha256: hash.digest("hex"),
    index,
  };
}

function corrupt(what: string, cause?: unknown): StateError {
  return new StateError("E_CORRUPT", `cold archive: ${what}`, cause === undefined ? {} : { cause });
}

/** The bytes of one gzip member; a bad CRC, a cut member or a non-gzip range is E_CORRUPT. */
export function inflateMember(bytes: Buffer, what: string): Buffer {
  try {
    return gunzipSync(bytes);
  } catch (error) {
    throw corrupt(`${what} does not inflate`, error);
  }
}

function inflate(bytes: Buffer, what: string): string {
  return inflateMember(bytes, what).toString("utf8");
}

/** Member `i` inflated elsewhere (checked there, as `inflateMember` does), or undefined: inflate it here. */
export type InflatedMembers = (i: number) => Buffer | undefined;

/** Reads an archive of `size` bytes through `readAt`: the index at once, members on demand. */
export class ArchiveReader {
  readonly index: ArchiveIndex;
  private readonly blobsBySha: Map<string, ArchiveBlobEntry>;

  constructor(
    private readonly readAt: ReadAt,
    size: number,
  ) {
    if (size < TRAILER_BYTES) throw corrupt(`${size} bytes is too short`);
    const trailer = readAt(size - TRAILER_BYTES, TRAILER_BYTES);
    if (trailer.toString("latin1", 0, 8) !== COLD_ARCHIVE_MAGIC) throw corrupt("bad magic");
    const indexOffset = Number(trailer.readBigUInt64BE(8));
    if (indexOffset > size - TRAILER_BYTES) throw corrupt("index offset past the end");
    const indexBytes = readAt(indexOffset, size - TRAILER_BYTES - indexOffset);
    this.index = JSON.parse(inflate(indexBytes, "index")) as ArchiveIndex;
    if (this.index.format !== FORMAT) throw corrupt(`unknown format ${this.index.format}`);
    this.blobsBySha = new Map(this.index.blobs.map((b) => [b.sha256, b]));
  }

  /** The events of member `i`, in seq order; `inflated` gives its bytes inflated already. */
  member(i: number, inflated?: InflatedMembers): ArchivedEvent[] {
    const m = this.index.members[i];
    if (m === undefined) throw new RangeError(`no member ${i}`);
    const ahead = inflated?.(i);
    const text =
      ahead === undefined
        ? inflate(this.readAt(m.offset, m.length), `member ${i}`)
        : ahead.toString("utf8");
    const events = eventsOf(text);
    if (events.length !== m.events)
      throw corrupt(`member ${i} holds ${events.length} events, not ${m.events}`);
    return events;
  }

  /** The index of the member holding `seq`, or -1. */
  memberOf(seq: number): number {
    return this.index.members.findIndex((m) => m.firstSeq <= seq && seq <= m.lastSeq);
  }

  /**
   * Events with seq above `afterSeq`, in order, inflating members as they are reached (or taking
   * them from `inflated`).
   */
  *eventsAfter(afterSeq: number, inflated?: InflatedMembers): IterableIterator<ArchivedEvent> {
    const members = this.index.members;
    for (let i = 0; i < members.length; i++) {
      if ((members[i] as ArchiveMember).lastSeq <= afterSeq) continue;
      for (const event of this.member(i, inflated)) if (event.seq > afterSeq) yield event;
    }
  }

  /** The last `n` events, in seq order: only the members that hold them are inflated. */
  tail(n: number): ArchivedEvent[] {
    const out: ArchivedEvent[][] = [];
    let count = 0;
    for (let i = this.index.members.length - 1; i >= 0 && count < n; i--) {
      const events = this.member(i);
      out.unshift(events);
      count += events.length;
    }
    return out.flat().slice(-n);
  }

  /** The data of blob `sha256`, or undefined when the archive has none. */
  blob(sha256: string): Buffer | undefined {
    const entry = this.blobsBySha.get(sha256);
    return entry === undefined ? undefined : this.readAt(entry.offset, entry.length);
  }

  /** Every blob of the archive, with its data. */
  blobs(): ArchivedBlob[] {
    return this.index.blobs.map((b) => ({
      sha256: b.sha256,
      mimeType: b.mimeType,
      createdAt: b.createdAt,
      data: this.readAt(b.offset, b.length),
    }));
  }

  /** Throws unless the index says the archive holds `events` events from `firstSeq` to `lastSeq`. */
  checkCounts(expected: { events: number; firstSeq: number; lastSeq: number }): void {
    const { index } = this;
    const count = index.members.reduce((sum, m) => sum + m.events, 0);
    if (
      count !== expected.events ||
      index.events !== count ||
      index.firstSeq !== expected.firstSeq ||
      index.lastSeq !== expected.lastSeq
    ) {
      throw corrupt(
        `index counts ${count} events (seq ${index.firstSeq}..${index.lastSeq}), expected ${expected.events} (seq ${expected.firstSeq}..${expected.lastSeq})`,
      );
    }
  }

  /**
   * Inflates every member and hashes every blob: throws unless the archive holds `events` events
   * from `firstSeq` to `lastSeq` and each blob matches its SHA-256.
   */
  verify(expected: { events: number; firstSeq: number; lastSeq: number }): void {
    const { index } = this;
    let count = 0;
    let last = 0;
    for (let i = 0; i < index.members.length; i++) {
      for (const event of this.member(i)) {
        if (event.seq <= last) throw corrupt(`seq ${event.seq} out of order`);
        last = event.seq;
        count++;
      }
    }
    const first = index.members[0]?.firstSeq ?? 0;
    if (count !== expected.events || first !== expected.firstSeq || last !== expected.lastSeq) {
      throw corrupt(
        `holds ${count} events (seq ${first}..${last}), expected ${expected.events} (seq ${expected.firstSeq}..${expected.lastSeq})`,
      );
    }
    for (const blob of index.blobs) {
      const sha = createHash("sha256").update(this.readAt(blob.offset, blob.length)).digest("hex");
      if (sha !== blob.sha256) throw corrupt(`blob ${blob.sha256} does not match its hash`);
    }
  }
}
