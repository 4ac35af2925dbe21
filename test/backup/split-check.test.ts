// SnapshotChecker as the built package runs it: checks in worker threads, a large snapshot split
// in two halves over two threads. The halves must reach the verdict of the whole check, and a
// snapshot held open after its check is let go of once discarded and the checker closed.
import { copyFileSync, existsSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { beforeAll, describe, expect, it } from "vitest";
import type * as SnapshotCheckModule from "../../src/backup/snapshot-check.js";
import {
  DAMAGES,
  damagedCopy,
  useCheckableDatabase,
} from "../../src/backup/test-support/damaged-databases.js";
import { chooseDriver, supportsInertModules } from "../../src/db/driver-choice.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";

const tempDir = useTempDirs();
let built: typeof SnapshotCheckModule;
const checkable = useCheckableDatabase();
let base: string;

beforeAll(async () => {
  requireBuild();
  const url = new URL("../../dist/backup/snapshot-check.js", import.meta.url);
  expect(existsSync(new URL("snapshot-check-worker.js", url))).toBe(true);
  built = (await import(url.href)) as typeof SnapshotCheckModule;
  base = checkable();
});

async function withChecker<T>(
  options: { threads?: number; splitFromBytes?: number },
  use: (checker: SnapshotCheckModule.SnapshotChecker) => Promise<T>,
): Promise<T> {
  const checker = new built.SnapshotChecker(options);
  try {
    return await use(checker);
  } finally {
    checker.close();
  }
}

describe("SnapshotChecker (built, in worker threads)", () => {
  it("split over two threads, finds what one whole check finds", async () => {
    const dir = tempDir();
    const files = [
      { path: base, expected: /^ok$/ },
      ...DAMAGES.map((damage, i) => ({
        path: damagedCopy(base, join(dir, `damaged-${i}.sqlite`), damage),
        expected: damage.expected,
      })),
    ];
    // Every check is sent at once, so replies from both threads interleave.
    const split = await withChecker({ threads: 2, splitFromBytes: 0 }, (checker) =>
      Promise.all(files.map((file) => checker.check(file.path))),
    );
    const whole = await withChecker({ threads: 1 }, (checker) =>
      Promise.all(files.map((file) => checker.check(file.path))),
    );
    files.forEach((file, i) => {
      expect(split[i]?.integrityCheck).toMatch(file.expected);
      expect(whole[i]?.integrityCheck).toMatch(file.expected);
      expect(split[i]?.schemaVersion).toBe(whole[i]?.schemaVersion);
    });
  });

  it("a snapshot below the split size is checked whole; a missing one is reported", async () => {
    const damage = DAMAGES.find((d) => d.name.startsWith("an index"));
    const path = damagedCopy(base, join(tempDir(), "small.sqlite"), damage as never);
    const [small, missing] = await withChecker({ threads: 2 }, (checker) =>
      Promise.all([checker.check(path), checker.check(join(tempDir(), "gone.sqlite"))]),
    );
    expect(small?.integrityCheck).toMatch(/row \d+ missing from index t_a/);
    expect(missing?.integrityCheck).toMatch(/^cannot be checked: /);
  });

  it("a held snapshot stays open in the threads until discarded and closed, then is let go", async () => {
    const path = join(tempDir(), "held.sqlite");
    copyFileSync(base, path);
    const checker = new built.SnapshotChecker({ threads: 2, splitFromBytes: 0 });
    try {
      expect((await checker.check(path, { hold: true })).integrityCheck).toBe("ok");
      // Both halves' connections are still open on it, one per thread; node:sqlite cannot split
      // (no inert FTS5), so there the one whole check's connection is.
      const connections = supportsInertModules(chooseDriver()) ? 2 : 1;
      expect(descriptorsOn(path).length).toBeGreaterThanOrEqual(connections);
      checker.discard(path);
      expect(existsSync(path)).toBe(false);
      expect(descriptorsOn(path).every((target) => target.endsWith("(deleted)"))).toBe(true);
    } finally {
      checker.close();
    }
    for (let waited = 0; descriptorsOn(path).length > 0 && waited < 10_000; waited += 50) {
      await delay(50);
    }
    expect(descriptorsOn(path)).toEqual([]);
  });

  it("a snapshot checked without hold is closed by the time its answer comes", async () => {
    const path = join(tempDir(), "unheld.sqlite");
    copyFileSync(base, path);
    await withChecker({ threads: 2, splitFromBytes: 0 }, async (checker) => {
      expect((await checker.check(path)).integrityCheck).toBe("ok");
      expect(descriptorsOn(path)).toEqual([]);
    });
  });
});

/** This process's open file descriptors on `path` (Linux: /proc/self/fd), as their link targets. */
function descriptorsOn(path: string): string[] {
  const targets: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target === path || target === `${path} (deleted)`) targets.push(target);
    } catch {
      // Closed between the listing and the read.
    }
  }
  return targets;
}
