import { createHash, randomBytes } from "node:crypto";
import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import {
  type ArchivedBlob,
  type ArchivedEvent,
  ArchiveReader,
  COLD_MEMBER_BYTES,
  encodeArchive,
} from "./cold-archive.js";

function readerOf(bytes: Buffer, reads: Array<[number, number]> = []): ArchiveReader {
  return new ArchiveReader((offset, length) => {
    reads.push([offset, length]);
    return bytes.subarray(offset, offset + length);
  }, bytes.length);
}

function bytesOf(events: ArchivedEvent[], blobs: ArchivedBlob[] = []): Buffer {
  return Buffer.concat(encodeArchive("s", events, blobs).chunks);
}

function event(seq: number, json: string, extra: Partial<ArchivedEvent> = {}): ArchivedEvent {
  return {
    seq,
    eventId: `e${seq}`,
    eventType: "message",
    parentId: seq > 1 ? `e${seq - 1}` : null,
    idempotencyKey: null,
    createdAt: 1_700_000_000_000 + seq,
    eventJson: json,
    blobRefs: [],
    ...extra,
  };
}

const anyEvent = fc.record({
  eventId: fc.string({ minLength: 1, maxLength: 12 }),
  eventType: fc.string({ minLength: 1, maxLength: 10 }),
  parentId: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  idempotencyKey: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  createdAt: fc.integer({ min: 0, max: 2 ** 47 }),
  // Any text, tabs, newlines and lone surrogates included: the row format must not care.
  eventJson: fc.string({ unit: "binary", maxLength: 200 }),
  blobRefs: fc.array(
    fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 64, maxLength: 64 }),
    { maxLength: 2 },
  ),
});

describe("cold archive codec", () => {
  it("gives back every row exactly, for any text", () => {
    fc.assert(
      fc.property(fc.array(anyEvent, { maxLength: 40 }), (rows) => {
        const events = rows.map((row, i) => ({ ...row, seq: i + 1 }));
        const reader = readerOf(bytesOf(events));
        expect([...reader.eventsAfter(0)]).toEqual(
          events.map((e) => ({ ...e, eventJson: Buffer.from(e.eventJson).toString() })),
        );
        const n = Math.min(3, events.length);
        expect(reader.tail(3).map((e) => e.seq)).toEqual(
          events.slice(events.length - n).map((e) => e.seq),
        );
      }),
      { numRuns: 200 },
    );
  });

  it("splits rows into ~1 MiB members and inflates only the last for a tail", () => {
    const big = "x".repeat(40_000);
    const events = Array.from({ length: 100 }, (_, i) => event(i + 1, `{"t":"${big}${i}"}`));
    const bytes = bytesOf(events);
    const reader = readerOf(bytes);
    const members = reader.index.members;
    expect(members.length).toBe(Math.ceil((100 * 40_080) / COLD_MEMBER_BYTES));
    for (const m of members) {
      const raw = gunzipSync(bytes.subarray(m.offset, m.offset + m.length));
      expect(raw.length).toBeLessThan(COLD_MEMBER_BYTES + 41_000);
    }
    const reads: Array<[number, number]> = [];
    const tailReader = readerOf(bytes, reads);
    reads.length = 0;
    expect(tailReader.tail(5).map((e) => e.seq)).toEqual([96, 97, 98, 99, 100]);
    const last = members.at(-1);
    expect(reads).toEqual([[last?.offset, last?.length]]);
    expect([...reader.eventsAfter(98)].map((e) => e.seq)).toEqual([99, 100]);
    expect(reader.memberOf(1)).toBe(0);
    expect(reader.memberOf(100)).toBe(members.length - 1);
  });

  it("keeps blobs as exact byte ranges and checks them against their hashes", () => {
    const data = randomBytes(50_000);
    const sha256 = createHash("sha256").update(data).digest("hex");
    const blob = { sha256, mimeType: "image/png", createdAt: 5, data };
    const bytes = bytesOf([event(1, "{}", { blobRefs: [sha256] })], [blob]);
    const reader = readerOf(bytes);
    expect(reader.blob(sha256)?.equals(data)).toBe(true);
    expect(reader.blobs()).toEqual([blob]);
    reader.verify({ events: 1, firstSeq: 1, lastSeq: 1 });
    const entry = reader.index.blobs[0];
    const damaged = Buffer.from(bytes);
    const at = (entry?.offset ?? 0) + 10;
    damaged[at] = (damaged[at] as number) ^ 0xff;
    expect(() => readerOf(damaged).verify({ events: 1, firstSeq: 1, lastSeq: 1 })).toThrow(/blob/);
  });

  it("refuses a cut, damaged or foreign file with E_CORRUPT, and wrong counts", () => {
    const events = Array.from({ length: 20 }, (_, i) => event(i + 1, `{"i":${i}}`));
    const bytes = bytesOf(events);
    const corrupt = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return isStateError(error, "E_CORRUPT");
      }
      return false;
    };
    expect(corrupt(() => readerOf(bytes.subarray(0, bytes.length - 3)))).toBe(true);
    expect(corrupt(() => readerOf(Buffer.from("not an archive at all")))).toBe(true);
    const flipped = Buffer.from(bytes);
    flipped[20] = (flipped[20] as number) ^ 0xff;
    expect(corrupt(() => readerOf(flipped).member(0))).toBe(true);
    const reader = readerOf(bytes);
    expect(() => reader.checkCounts({ events: 21, firstSeq: 1, lastSeq: 20 })).toThrow(
      expect.objectContaining({ code: "E_CORRUPT" }),
    );
    expect(() => reader.verify({ events: 20, firstSeq: 2, lastSeq: 20 })).toThrow(
      expect.objectContaining({ code: "E_CORRUPT" }),
    );
    reader.checkCounts({ events: 20, firstSeq: 1, lastSeq: 20 });
    reader.verify({ events: 20, firstSeq: 1, lastSeq: 20 });
  });

  it("encodes the same rows to the same bytes (a repeated move writes the same file)", () => {
    const events = Array.from({ length: 50 }, (_, i) => event(i + 1, `{"i":${i},"t":"雪"}`));
    expect(encodeArchive("s", events, []).sha256).toBe(encodeArchive("s", events, []).sha256);
  });

  it("reads archives of any deflate level the same: those written at level 6 before stay readable", () => {
    const text = (i: number) => `{"i":${i},"t":"${"word ".repeat(i % 40)}雪"}`;
    const events = Array.from({ length: 3000 }, (_, i) => event(i + 1, text(i)));
    const blob = { sha256: "", mimeType: "image/png", createdAt: 1, data: randomBytes(5000) };
    blob.sha256 = createHash("sha256").update(blob.data).digest("hex");
    const encoded = [1, 6, 9].map((level) => encodeArchive("s", events, [blob], level));
    const sizes = encoded.map((e) => e.bytes);
    expect(new Set(sizes).size).toBe(3);
    for (const archive of encoded) {
      const reader = readerOf(Buffer.concat(archive.chunks));
      expect([...reader.eventsAfter(0)]).toEqual(events);
      expect(reader.blob(blob.sha256)).toEqual(blob.data);
      expect(reader.tail(5)).toEqual(events.slice(-5));
    }
  });
});
