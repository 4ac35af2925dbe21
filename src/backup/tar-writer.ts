import { createHash } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { StateError } from "../db/errors.js";
import { FILE_MODE } from "../db/files.js";
import { tarEnd, tarEntryHeader, tarPadding } from "../tar/entry-header.js";
import { type ArchiveSink, FileSink, ParallelGzipSink } from "./archive-sink.js";
import { DirectWriter } from "./direct-writer.js";

/** Large enough that per-block costs (a syscall, a gzip member, an event-loop turn) vanish. */
const BLOCK = 4 << 20;

export interface WrittenEntry {
  name: string;
  bytes: number;
  sha256: string;
}

function headerFor(name: string, size: number, mtime: Date): Buffer {
  return tarEntryHeader({ path: name, type: "File", mode: FILE_MODE, size, mtime });
}

/**
 * Writes a tar (optionally gzip) archive of regular-file entries. Bodies are read straight into
 * the archive's next block and hashed there: one copy from the page cache, one pass over the
 * bytes, and no entry is ever held in memory whole. The file is created owner-only and never
 * overwritten; `finish` flushes it to disk before returning.
 */
export class TarWriter {
  private block: Buffer;
  private used = 0;
  /** Blocks the sink has handed back, to be filled again. */
  private readonly spare: Buffer[] = [];

  private constructor(
    private readonly fd: number,
    private readonly sink: ArchiveSink,
  ) {
    this.block = sink.allocate(BLOCK);
  }

  /**
   * A plain tar is made of 512-byte records and written in 4 MiB blocks, so all of it but its
   * last block can be written past the page cache (see DirectWriter); gzip members have any length.
   */
  static create(path: string, options: { gzip: boolean }): TarWriter {
    const fd = openSync(path, "wx", FILE_MODE);
    if (options.gzip) return new TarWriter(fd, new ParallelGzipSink(new FileSink(fd)));
    return new TarWriter(fd, new FileSink(fd, DirectWriter.open(path)));
  }

  private async flush(): Promise<void> {
    if (this.used === 0) return;
    const full = this.block;
    const bytes = full.subarray(0, this.used);
    this.block = this.spare.pop() ?? this.sink.allocate(BLOCK);
    this.used = 0;
    await this.sink.write(bytes, () => this.spare.push(full));
  }

  private async put(bytes: Buffer): Promise<void> {
    for (let done = 0; done < bytes.length; ) {
      if (this.used === BLOCK) await this.flush();
      const n = bytes.copy(this.block, this.used, done);
      this.used += n;
      done += n;
    }
  }

  /**
   * Appends `source` as `name`. The size is taken once, when the file is opened; a file that
   * shrinks while it is read fails the entry rather than leaving a short body in the archive.
   */
  async addFile(
    name: string,
    source: string,
    onBytes?: (bytes: number) => void,
  ): Promise<WrittenEntry> {
    const fd = openSync(source, "r");
    try {
      const { size, mtime } = fstatSync(fd);
      await this.put(headerFor(name, size, mtime));
      const hash = createHash("sha256");
      for (let done = 0; done < size; ) {
        if (this.used === BLOCK) await this.flush();
        const want = Math.min(BLOCK - this.used, size - done);
        // Synchronous reads skip a thread-pool round trip per block; compression and the
        // integrity checks run on other threads meanwhile.
        const bytesRead = readSync(fd, this.block, this.used, want, done);
        if (bytesRead === 0) {
          throw new StateError(
            "E_CONFLICT",
            `${source} shrank from ${size} to ${done} bytes while it was being backed up; run the backup again`,
            { details: { path: source } },
          );
        }
        hash.update(this.block.subarray(this.used, this.used + bytesRead));
        this.used += bytesRead;
        done += bytesRead;
        onBytes?.(bytesRead);
      }
      await this.put(tarPadding(size));
      return { name, bytes: size, sha256: hash.digest("hex") };
    } finally {
      closeSync(fd);
    }
  }

  async addBuffer(name: string, data: Buffer, mtime: Date): Promise<WrittenEntry> {
    await this.put(headerFor(name, data.length, mtime));
    await this.put(data);
    await this.put(tarPadding(data.length));
    return { name, bytes: data.length, sha256: createHash("sha256").update(data).digest("hex") };
  }

  /**
   * Hands what is buffered to the sink and starts writing the archive so far to disk, e.g. while
   * waiting for integrity checks: the final fsync then has little left to do.
   */
  async flushEarly(): Promise<void> {
    await this.flush();
    this.sink.flushEarly();
  }

  /** Writes the end-of-archive marker, flushes everything to disk and closes the file. */
  async finish(): Promise<void> {
    await this.put(tarEnd());
    await this.flush();
    await this.sink.finish();
    this.sink.close();
    closeSync(this.fd);
  }

  /** Stops writing after a failure; the caller removes the partial file. */
  abort(): void {
    this.sink.close();
    try {
      closeSync(this.fd);
    } catch {
      // Already closed by a finish that failed late.
    }
  }
}
