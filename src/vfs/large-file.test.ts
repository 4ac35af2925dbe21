import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../db/database.js";
import { VfsStore } from "../stores/agent/vfs-store.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { exportTar, importTar } from "./archive.js";

const tempDir = useTempDirs();
const SIZE = 100 * 1024 * 1024;
const PIECE = 64 * 1024;
/**
 * Generous bounds for a 100 MB file. Measured: ~6 MB of live ArrayBuffers (a few 256 KiB chunks in
 * flight) and ~45 MB of rss (V8 heap growth, SQLite's page cache, allocator high-water marks),
 * the same for 20 MB and 200 MB files outside the test runner.
 */
const MAX_RSS_GROWTH = 64 * 1024 * 1024;
const MAX_BUFFER_GROWTH = 32 * 1024 * 1024;

// Garbage buffers wait for V8's external-memory GC trigger (about 64 MB), so samples collect
// first: the watch measures what the code holds, not what the collector has not reached yet.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Tracks the peak of rss and ArrayBuffer memory above a baseline taken now. */
function memoryWatch() {
  gc();
  const base = process.memoryUsage();
  let rss = 0;
  let arrayBuffers = 0;
  return {
    sample(): void {
      gc();
      const now = process.memoryUsage();
      rss = Math.max(rss, now.rss - base.rss);
      arrayBuffers = Math.max(arrayBuffers, now.arrayBuffers - base.arrayBuffers);
    },
    peak: () => ({ rss, arrayBuffers }),
  };
}

async function* tap<T extends Uint8Array>(
  source: AsyncIterable<T>,
  onChunk: (chunk: T, index: number) => void,
): AsyncGenerator<T> {
  let index = 0;
  for await (const chunk of source) {
    onChunk(chunk, index++);
    yield chunk;
  }
}

/**
 * The same path once with a small file, before the baseline: what the first use costs whatever the
 * size (modules loaded on first use such as tar, compiled code, the page cache's first pages) is
 * not growth with the file.
 */
async function warmUp(store: VfsStore): Promise<void> {
  const vfs = store.namespace("warm-up");
  async function* small(): AsyncGenerator<Buffer> {
    for (let i = 0; i < 16; i++) yield randomBytes(PIECE);
  }
  await vfs.writeFileStream("/data/small.bin", small(), { parents: true });
  for await (const _ of vfs.createReadStream("/data/small.bin"));
  await importTar(store.namespace("warm-up-copy"), exportTar(vfs, { path: "/data" }));
}

describe("a 100 MB file", () => {
  it("round-trips through a stream, a tar export and a tar import with bounded memory", async () => {
    const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
    const store = new VfsStore(db);
    const vfs = store.namespace("big");
    const noise = randomBytes(PIECE);
    const written = createHash("sha256");
    await warmUp(store);
    const watch = memoryWatch();
    async function* source(): AsyncGenerator<Buffer> {
      for (let offset = 0; offset < SIZE; offset += PIECE) {
        const piece = Buffer.from(noise);
        piece.writeUInt32LE(offset / PIECE, 0);
        written.update(piece);
        yield piece;
      }
    }
    const sampleEvery = (n: number) => (_: unknown, index: number) => {
      if (index % n === 0) watch.sample();
    };

    const stat = await vfs.writeFileStream("/data/big.bin", tap(source(), sampleEvery(32)), {
      parents: true,
    });
    expect(stat.size).toBe(SIZE);
    const digest = written.digest("hex");

    const read = createHash("sha256");
    for await (const chunk of tap(vfs.createReadStream("/data/big.bin"), sampleEvery(8))) {
      read.update(chunk as Buffer);
    }
    expect(read.digest("hex")).toBe(digest);

    const copy = store.namespace("copy");
    await importTar(copy, tap(exportTar(vfs, { path: "/data" }), sampleEvery(8)));
    const copied = createHash("sha256");
    for (const chunk of copy.readChunks("/big.bin")) copied.update(chunk);
    expect(copied.digest("hex")).toBe(digest);

    watch.sample();
    const peak = watch.peak();
    expect(peak.rss, `rss grew by ${peak.rss} bytes`).toBeLessThan(MAX_RSS_GROWTH);
    expect(peak.arrayBuffers, `ArrayBuffers grew by ${peak.arrayBuffers}`).toBeLessThan(
      MAX_BUFFER_GROWTH,
    );
    db.close();
  });
});
