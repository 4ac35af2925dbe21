import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { TarWriter } from "./tar-writer.js";
import { gzipMembers, readEntries } from "./test-support/archives.js";

const tempDir = useTempDirs();

/** ~11 MiB that compresses like text: bodies cross several blocks and gzip members. */
function textLike(): Buffer {
  const words = Array.from({ length: 4000 }, () => randomBytes(6).toString("base64url"));
  const parts: string[] = [];
  for (let i = 0, size = 0; size < 11 * 1024 * 1024 + 77; i++) {
    const line = `{"seq":${i},"text":"${words[(i * 7919) % words.length]} ${words[i % words.length]}"}\n`;
    parts.push(line);
    size += line.length;
  }
  return Buffer.from(parts.join(""));
}

function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

async function writeArchive(dir: string, gzip: boolean, big: Buffer): Promise<string> {
  writeFileSync(join(dir, "big.jsonl"), big);
  writeFileSync(join(dir, "small.txt"), "small\n");
  const archive = join(dir, gzip ? "out.tar.gz" : "out.tar");
  const writer = TarWriter.create(archive, { gzip });
  const written = [
    await writer.addFile("files/big.jsonl", join(dir, "big.jsonl")),
    await writer.addFile("files/small.txt", join(dir, "small.txt")),
    await writer.addBuffer("manifest.json", Buffer.from("{}\n"), new Date(0)),
  ];
  await writer.finish();
  expect(written.map((entry) => [entry.name, entry.bytes, entry.sha256])).toEqual([
    ["files/big.jsonl", big.length, sha256(big)],
    ["files/small.txt", 6, sha256(Buffer.from("small\n"))],
    ["manifest.json", 3, sha256(Buffer.from("{}\n"))],
  ]);
  return archive;
}

function extractWithSystemTar(archive: string): string {
  const out = tempDir();
  execFileSync("tar", ["-xf", archive, "-C", out]);
  return out;
}

describe("TarWriter", () => {
  it("writes a gzip archive of several members that gzip, the system tar and zlib read whole", async () => {
    const dir = tempDir();
    const big = textLike();
    const archive = await writeArchive(dir, true, big);
    expect(modeOf(statSync(archive))).toBe(0o600);
    const bytes = readFileSync(archive);
    expect(gzipMembers(archive)).toBeGreaterThan(1);
    expect(bytes.length).toBeLessThan(big.length / 2);
    execFileSync("gzip", ["-t", archive]);
    const listing = execFileSync("tar", ["-tzf", archive], { encoding: "utf8" });
    expect(listing.split("\n").filter(Boolean)).toEqual([
      "files/big.jsonl",
      "files/small.txt",
      "manifest.json",
    ]);
    const out = extractWithSystemTar(archive);
    expect(readFileSync(join(out, "files/big.jsonl")).equals(big)).toBe(true);
    expect(readFileSync(join(out, "files/small.txt"), "utf8")).toBe("small\n");
    expect(readEntries(archive).map((entry) => [entry.path, sha256(entry.body)])).toEqual([
      ["files/big.jsonl", sha256(big)],
      ["files/small.txt", sha256(Buffer.from("small\n"))],
      ["manifest.json", sha256(Buffer.from("{}\n"))],
    ]);
  });

  it("writes a plain tar whose bodies the system tar extracts byte for byte", async () => {
    const dir = tempDir();
    const big = randomBytes(9 * 1024 * 1024 + 3);
    const archive = await writeArchive(dir, false, big);
    expect(readFileSync(archive).subarray(0, 2).toString("hex")).not.toBe("1f8b");
    // Headers, bodies padded to 512-byte blocks, and the two-block end marker.
    const padded = (n: number) => Math.ceil(n / 512) * 512;
    expect(statSync(archive).size).toBe(
      512 * 3 + padded(big.length) + padded(6) + padded(3) + 1024,
    );
    const out = extractWithSystemTar(archive);
    expect(readFileSync(join(out, "files/big.jsonl")).equals(big)).toBe(true);
    expect(readFileSync(join(out, "manifest.json"), "utf8")).toBe("{}\n");
  });

  it("a plain tar stays whole when an early flush leaves later blocks at unaligned offsets", async () => {
    const dir = tempDir();
    const first = randomBytes(5 * 1024 * 1024 + 1);
    const second = randomBytes(9 * 1024 * 1024 + 513);
    writeFileSync(join(dir, "first.bin"), first);
    writeFileSync(join(dir, "second.bin"), second);
    const archive = join(dir, "mixed.tar");
    const writer = TarWriter.create(archive, { gzip: false });
    await writer.addFile("files/first.bin", join(dir, "first.bin"));
    // Writes a partial block: every block after it starts off a 4 KiB boundary.
    await writer.flushEarly();
    await writer.addFile("files/second.bin", join(dir, "second.bin"));
    await writer.addBuffer("manifest.json", Buffer.from("{}\n"), new Date(0));
    await writer.finish();
    const out = extractWithSystemTar(archive);
    expect(readFileSync(join(out, "files/first.bin")).equals(first)).toBe(true);
    expect(readFileSync(join(out, "files/second.bin")).equals(second)).toBe(true);
    expect(readEntries(archive).map((entry) => [entry.path, sha256(entry.body)])).toEqual([
      ["files/first.bin", sha256(first)],
      ["files/second.bin", sha256(second)],
      ["manifest.json", sha256(Buffer.from("{}\n"))],
    ]);
  });
});
