import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";

const UNSAFE_FILE_CHARS = /[^A-Za-z0-9._-]/g;

/**
 * A file name that keeps an id's readable part and extension (channel senders pick the MIME type
 * from it) but can never climb out of its directory or be hidden.
 */
export function safeFileName(id: string): string {
  const name = id.replace(UNSAFE_FILE_CHARS, "_").replace(/^\.+/, "_").slice(-200);
  return name === "" ? "media" : name;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/**
 * Writes `data` to a 0600 file in a fresh 0700 directory under `parent`, runs `fn(path)` and removes
 * the directory afterwards: when `fn` returns, throws, or — for an async `fn` — when its promise
 * settles. The directory, not just the file, is private and removed, so `fn` may leave siblings
 * (a converted copy, a thumbnail) without leaking them.
 */
export function withTempFile<T>(
  parent: string,
  name: string,
  data: Uint8Array,
  fn: (path: string) => T,
): T {
  // mkdtemp creates the directory 0700 whatever the umask.
  const dir = mkdtempSync(join(parent, "agentstate-media-"));
  let removeNow = true;
  try {
    const path = join(dir, safeFileName(name));
    writeFileSync(path, data, { mode: 0o600, flag: "wx" });
    const result = fn(path);
    if (isPromiseLike(result)) {
      removeNow = false;
      const cleanup = () => rm(dir, { recursive: true, force: true });
      return Promise.resolve(result).finally(cleanup) as T;
    }
    return result;
  } finally {
    if (removeNow) rmSync(dir, { recursive: true, force: true });
  }
}
