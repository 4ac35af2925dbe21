import { StateError } from "../db/errors.js";

const MAGIC = 0x184d2204;

/**
 * The decompressed length of an LZ4 frame, counted from its block sequences without
 * decompressing. Litestream 0.3 writes each replica WAL segment as one LZ4 frame without a
 * content size, and the segment's end is what `durable()` compares with a local commit.
 */
export function lz4DecodedLength(frame: Uint8Array): number {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  if (frame.byteLength < 7 || view.getUint32(0, true) !== MAGIC) {
    throw new StateError("E_CORRUPT", "not an LZ4 frame (bad magic number)");
  }
  const flags = frame[4] as number;
  let at = 6 + (flags & 0x08 ? 8 : 0) + (flags & 0x01 ? 4 : 0) + 1;
  const blockChecksum = flags & 0x10 ? 4 : 0;
  let total = 0;
  for (;;) {
    if (at + 4 > frame.byteLength) throw truncated();
    const word = view.getUint32(at, true);
    at += 4;
    if (word === 0) return total;
    const size = word & 0x7fffffff;
    if (at + size > frame.byteLength) throw truncated();
    total += word & 0x80000000 ? size : blockLength(frame, at, at + size);
    at += size + blockChecksum;
  }
}

/** The decoded length of one compressed block: its literals plus its matches. */
function blockLength(bytes: Uint8Array, start: number, end: number): number {
  let at = start;
  let total = 0;
  const extended = (base: number): number => {
    let length = base;
    if (base !== 15) return length;
    for (;;) {
      if (at >= end) throw truncated();
      const more = bytes[at++] as number;
      length += more;
      if (more !== 255) return length;
    }
  };
  while (at < end) {
    const token = bytes[at++] as number;
    const literals = extended(token >> 4);
    at += literals;
    total += literals;
    if (at >= end) break; // The last sequence carries literals only.
    at += 2; // The match offset.
    total += extended(token & 0x0f) + 4;
  }
  if (at !== end) throw truncated();
  return total;
}

function truncated(): StateError {
  return new StateError("E_CORRUPT", "truncated LZ4 frame");
}
