import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../test-support/temp-dir.js";
import { DIRECT_ALIGN, DirectWriter } from "./direct-writer.js";

const tempDir = useTempDirs();
const BLOCK = 4 << 20;

function pattern(block: Buffer, seed: number): Buffer {
  for (let i = 0; i < block.length; i++) block[i] = (i * 31 + seed) & 0xff;
  return block;
}

/** An empty file, its ordinary descriptor, and a direct writer on it. */
function openFile(): { path: string; fd: number; direct: DirectWriter } {
  const path = join(tempDir(), "archive.tar");
  const fd = openSync(path, "wx", 0o600);
  const direct = DirectWriter.open(path);
  // Every filesystem this runs on (ext4, tmpfs on Linux 6) takes O_DIRECT.
  if (!direct) throw new Error(`O_DIRECT is refused for ${path}`);
  return { path, fd, direct };
}

describe("DirectWriter", () => {
  it("writes whole aligned blocks of its own memory; the file reads back byte for byte", () => {
    const { path, fd, direct } = openFile();
    try {
      const block = direct.allocate(BLOCK);
      expect(block?.length).toBe(BLOCK);
      const first = pattern(block as Buffer, 1);
      expect(direct.write(first, 0)).toBe(BLOCK);
      const expected = [Buffer.from(first)];
      // A block with a ragged end: the writer takes the aligned part, the caller the rest.
      const second = pattern(block as Buffer, 2).subarray(0, 3 * DIRECT_ALIGN + 100);
      const taken = direct.write(second, BLOCK);
      expect(taken).toBe(3 * DIRECT_ALIGN);
      writeSync(fd, second, taken, second.length - taken, BLOCK + taken);
      expected.push(Buffer.from(second));
      expect(readFileSync(path).equals(Buffer.concat(expected))).toBe(true);
    } finally {
      direct.close();
      closeSync(fd);
    }
  });

  it("leaves to the caller memory it did not allocate, and unaligned offsets or starts", () => {
    const { path, fd, direct } = openFile();
    try {
      const own = direct.allocate(BLOCK) as Buffer;
      expect(direct.write(Buffer.alloc(2 * DIRECT_ALIGN, 1), 0)).toBe(0);
      expect(direct.write(own.subarray(0, DIRECT_ALIGN), 512)).toBe(0);
      expect(direct.write(own.subarray(512, 512 + DIRECT_ALIGN), 0)).toBe(0);
      expect(direct.write(own.subarray(0, DIRECT_ALIGN - 1), 0)).toBe(0);
      expect(readFileSync(path).length).toBe(0);
    } finally {
      direct.close();
      closeSync(fd);
    }
  });

  it("allocates only whole WebAssembly pages, and closes once", () => {
    const { fd, direct } = openFile();
    expect(direct.allocate(100_000)).toBeNull();
    expect(direct.allocate(64 * 1024)?.length).toBe(64 * 1024);
    direct.close();
    direct.close();
    closeSync(fd);
  });
});
