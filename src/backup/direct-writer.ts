import { closeSync, constants, openSync, writeSync } from "node:fs";

/**
 * What O_DIRECT asks of a write's memory, file offset and length on any disk: 4096 covers both
 * 512-byte and 4 KiB logical sectors.
 */
export const DIRECT_ALIGN = 4096;
/** WebAssembly memory grows in pages of 64 KiB. */
const WASM_PAGE = 64 * 1024;

// Node has WebAssembly; the project's type libraries (no DOM) do not declare it.
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
};

/**
 * Writes an archive's whole blocks with O_DIRECT: from memory to the disk, past the page cache.
 * A backup writes gigabytes that nothing reads soon; through the page cache they would push out
 * the pages the running gateway reads, and every page of them has to be found and filled first
 * (on a 200 MB archive, 60-400 ms of CPU against under 10 ms direct). Only aligned writes of
 * memory from `allocate` go direct; the caller writes anything else (the archive's last partial
 * block) through its ordinary descriptor. Where the filesystem refuses O_DIRECT (tmpfs, some
 * network filesystems) `open` returns null, and a write it refuses later turns direct writes off.
 */
export class DirectWriter {
  /** Memory from `allocate`: the only memory known to start on a page boundary. */
  private readonly aligned = new WeakSet<ArrayBufferLike>();
  private enabled = true;
  private open = true;

  private constructor(private readonly fd: number) {}

  /** A second, direct descriptor on the file at `path`, or null where O_DIRECT is unsupported. */
  static open(path: string): DirectWriter | null {
    // Not every platform defines O_DIRECT (macOS has no such flag).
    const flag = constants.O_DIRECT;
    if (!flag) return null;
    try {
      return new DirectWriter(openSync(path, constants.O_WRONLY | flag));
    } catch {
      return null;
    }
  }

  /**
   * `bytes` of page-aligned memory, or null. WebAssembly memory is mapped by pages, so it starts
   * on a page boundary; Buffer memory comes from malloc, which aligns to 16 bytes.
   */
  allocate(bytes: number): Buffer | null {
    if (bytes % WASM_PAGE !== 0) return null;
    try {
      const memory = new WebAssembly.Memory({ initial: bytes / WASM_PAGE });
      this.aligned.add(memory.buffer);
      return Buffer.from(memory.buffer);
    } catch {
      return null; // address space refused (a ulimit -v): ordinary memory, ordinary writes
    }
  }

  /**
   * Writes `bytes` at `position` directly when it can and returns how many bytes it wrote; the
   * caller writes the rest. An error other than a refusal of O_DIRECT is thrown.
   */
  write(bytes: Buffer, position: number): number {
    if (!this.enabled || !this.aligned.has(bytes.buffer)) return 0;
    const whole = bytes.length - (bytes.length % DIRECT_ALIGN);
    if (whole === 0 || bytes.byteOffset % DIRECT_ALIGN !== 0 || position % DIRECT_ALIGN !== 0) {
      return 0;
    }
    let done = 0;
    try {
      while (done < whole) done += writeSync(this.fd, bytes, done, whole - done, position + done);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EINVAL") throw error;
      this.enabled = false;
    }
    return done;
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    closeSync(this.fd);
  }
}
