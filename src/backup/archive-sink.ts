import { fsync, fsyncSync, writeSync } from "node:fs";
import { availableParallelism } from "node:os";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { DirectWriter } from "./direct-writer.js";

/**
 * Level 1: on a 200 MB transcript database, 1.5 s of CPU for 29.7% of the size, against 1.9 s for
 * 29.1% at level 3 and 3.3 s for 27.7% at the default level 6. A backup is made far more often
 * than it is read back, and gzip is its costliest stage by far.
 */
const GZIP_LEVEL = 1;
/** zlib's largest hash table: ~8% less CPU at level 1 on SQLite pages, for 128 KiB more per member. */
const GZIP_MEM_LEVEL = 9;

const gzipBlock = promisify(gzip);
const fsyncAsync = promisify(fsync);

/**
 * zlib's jobs run in libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise):
 * members beyond its threads, or beyond the cores, would only wait, each holding its blocks.
 */
function poolThreads(): number {
  return Number(process.env.UV_THREADPOOL_SIZE) || 4;
}

function writeAll(fd: number, bytes: Buffer, from: number, position: number): void {
  for (let done = from; done < bytes.length; ) {
    done += writeSync(fd, bytes, done, bytes.length - done, position + done);
  }
}

/**
 * Where the archive's bytes go, a block at a time and in order. `release` is called once the
 * sink no longer reads the block, so the caller can fill it again.
 */
export interface ArchiveSink {
  /** A block to fill and hand to `write`: the memory the sink writes best from. */
  allocate(bytes: number): Buffer;
  write(block: Buffer, release: () => void): Promise<void>;
  /** Starts moving what was written so far to disk, without waiting for it. */
  flushEarly(): void;
  /** Writes whatever is still pending and makes the whole file durable. */
  finish(): Promise<void>;
  /** Lets go of what the sink holds besides the file's descriptor (which its owner closes). */
  close(): void;
}

/**
 * Written bytes after which a background fsync starts: the disk writes the archive while the CPU
 * is still producing it, instead of all of it in the final fsync.
 */
const FLUSH_EVERY = 32 << 20;

/**
 * The file itself: blocks are written as they come, synchronously (no thread-pool round trip), at
 * explicit offsets. Given a `DirectWriter`, whole aligned blocks go through it, past the page cache.
 */
export class FileSink implements ArchiveSink {
  private flushing: Promise<void> | null = null;
  /** A background fsync's failure, thrown by `finish`: the kernel reports a write error once. */
  private failure: unknown = null;
  private unflushed = 0;
  /** Where the next byte goes. */
  private position = 0;

  constructor(
    private readonly fd: number,
    private readonly direct: DirectWriter | null = null,
  ) {}

  allocate(bytes: number): Buffer {
    return this.direct?.allocate(bytes) ?? Buffer.allocUnsafeSlow(bytes);
  }

  append(bytes: Buffer): void {
    const direct = this.direct?.write(bytes, this.position) ?? 0;
    writeAll(this.fd, bytes, direct, this.position);
    this.position += bytes.length;
    this.unflushed += bytes.length;
    if (this.unflushed >= FLUSH_EVERY) this.flushEarly();
  }

  async write(block: Buffer, release: () => void): Promise<void> {
    this.append(block);
    release();
    // One turn of the event loop per block keeps progress output and worker replies flowing.
    await new Promise((resolve) => setImmediate(resolve));
  }

  flushEarly(): void {
    // One at a time; bytes written meanwhile are picked up by the next one or by `finish`.
    if (this.flushing) return;
    this.unflushed = 0;
    this.flushing = fsyncAsync(this.fd)
      .catch((error: unknown) => {
        this.failure ??= error;
      })
      .finally(() => {
        this.flushing = null;
      });
  }

  async finish(): Promise<void> {
    await this.flushing;
    if (this.failure) throw this.failure;
    // The direct writes' data is on the disk already; this also makes the file's size and block
    // map durable, which O_DIRECT alone does not.
    fsyncSync(this.fd);
  }

  close(): void {
    this.direct?.close();
  }
}

/**
 * gzip in parallel: each block becomes one gzip member, compressed in the thread pool while the
 * next blocks are read and hashed. A gzip file is by definition a series of members, so gunzip,
 * `tar -xz` and zlib's streams read the result as one stream. With blocks of megabytes, starting
 * each member with an empty window costs well under 1% of the size, and compression (the slowest
 * stage of a backup by far) runs on every core instead of one.
 */
export class ParallelGzipSink implements ArchiveSink {
  private readonly members: Promise<Buffer>[] = [];

  constructor(
    private readonly file: FileSink,
    private readonly inFlight = Math.min(availableParallelism(), poolThreads()) + 1,
  ) {}

  allocate(bytes: number): Buffer {
    return Buffer.allocUnsafeSlow(bytes);
  }

  async write(block: Buffer, release: () => void): Promise<void> {
    const member = gzipBlock(block, {
      level: GZIP_LEVEL,
      memLevel: GZIP_MEM_LEVEL,
      // Room for the whole member, even of incompressible bytes (deflate adds 5 bytes per 16 KiB
      // stored): one thread-pool job per block, not one per 16 KiB of output.
      chunkSize: block.length + 64 * 1024,
    });
    // Settled here so that a failure waiting behind other members is never an unhandled one; it
    // is still thrown when that member's turn to be written comes.
    member.then(release, release);
    this.members.push(member);
    while (this.members.length >= this.inFlight) await this.writeOldest();
  }

  private async writeOldest(): Promise<void> {
    const member = this.members.shift();
    if (member) this.file.append(await member);
  }

  flushEarly(): void {
    this.file.flushEarly();
  }

  async finish(): Promise<void> {
    while (this.members.length > 0) await this.writeOldest();
    await this.file.finish();
  }

  close(): void {
    this.file.close();
  }
}
