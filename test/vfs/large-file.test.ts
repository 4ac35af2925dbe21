// A 100 MB file through the VFS with bounded memory. The work runs in a process of its own
// (test/fixtures/vfs-large-roundtrip.mjs, on the built package): measured inside the test runner,
// the runner's own allocations made rss swing by tens of MB with the machine's load.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { requireBuild } from "../support/built.js";

const FIXTURE = new URL("../fixtures/vfs-large-roundtrip.mjs", import.meta.url).pathname;
const SIZE = 100 * 1024 * 1024;
/**
 * Generous bounds for a 100 MB file. Measured in its own process: ~1.5 MB of live ArrayBuffers (a
 * few chunks in flight) and 5-13 MB (Node 20, better-sqlite3) to 11-22 MB (Node 24, node:sqlite)
 * of rss (V8 heap growth, SQLite's page cache, allocator high-water marks).
 */
const MAX_RSS_GROWTH = 64 * 1024 * 1024;
const MAX_BUFFER_GROWTH = 32 * 1024 * 1024;

interface RoundTrip {
  size: number;
  written: string;
  read: string;
  copied: string;
  rss: number;
  arrayBuffers: number;
}

describe("a 100 MB file", () => {
  it("round-trips through a stream, a tar export and a tar import with bounded memory", () => {
    requireBuild();
    const child = spawnSync(process.execPath, ["--expose-gc", FIXTURE, String(SIZE)], {
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(child.status, child.stderr).toBe(0);
    const result = JSON.parse(child.stdout) as RoundTrip;
    expect(result.size).toBe(SIZE);
    expect(result.read).toBe(result.written);
    expect(result.copied).toBe(result.written);
    expect(result.rss, `rss grew by ${result.rss} bytes`).toBeLessThan(MAX_RSS_GROWTH);
    expect(result.arrayBuffers, `ArrayBuffers grew by ${result.arrayBuffers}`).toBeLessThan(
      MAX_BUFFER_GROWTH,
    );
  });
});
