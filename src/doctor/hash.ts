import { createHash } from "node:crypto";
import { closeSync, readSync } from "node:fs";
import { openLegacyFile } from "./legacy-file.js";

/** SHA-256 of a file, read in 64 KiB chunks. */
export function sha256File(path: string): string {
  const hash = createHash("sha256");
  const fd = openLegacyFile(path);
  const chunk = Buffer.allocUnsafe(64 * 1024);
  try {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      hash.update(chunk.subarray(0, read));
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

/** A source's identity for idempotence: the same file, unchanged, into the same table. */
export function sourceKeyOf(parts: {
  kind: string;
  path: string;
  bytes: number;
  mtimeMs: number;
  sha256: string;
  targetTable: string;
}): string {
  const text = [
    parts.kind,
    parts.path,
    parts.bytes,
    parts.mtimeMs,
    parts.sha256,
    parts.targetTable,
  ].join("\0");
  return `legacy:${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
}
