import { createHash } from "node:crypto";
import { closeSync, readSync } from "node:fs";
import { openLegacyFile } from "./legacy-file.js";

const CHUNK_BYTES = 64 * 1024;

export interface RawLines {
  /** SHA-256 of the whole file as this pass read it. */
  sha256: string;
  /** The wanted lines found, each the file's exact bytes without its `\n` (a CR stays). */
  lines: Map<number, Buffer>;
}

/**
 * The exact bytes of some lines of a file (1-based numbers), with the hash of the same read, so
 * that a caller can tell they come from the file it planned and not from a later version of it.
 * Only the wanted lines are held in memory.
 */
export function readRawLines(path: string, wanted: ReadonlySet<number>): RawLines {
  const hash = createHash("sha256");
  const lines = new Map<number, Buffer>();
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  const fd = openLegacyFile(path);
  let line = 1;
  let parts: Buffer[] = [];
  try {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      const bytes = chunk.subarray(0, read);
      hash.update(bytes);
      let start = 0;
      for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, start)) {
        if (wanted.has(line)) lines.set(line, Buffer.concat([...parts, bytes.subarray(start, nl)]));
        parts = [];
        line++;
        start = nl + 1;
      }
      if (wanted.has(line) && start < read) parts.push(Buffer.from(bytes.subarray(start)));
    }
    if (parts.length > 0) lines.set(line, Buffer.concat(parts));
  } finally {
    closeSync(fd);
  }
  return { sha256: hash.digest("hex"), lines };
}
