// SnapshotChecker as the built package runs it: checks in worker threads, a large snapshot split
// in two halves over two threads. The halves must reach the verdict of the whole check.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type * as SnapshotCheckModule from "../../src/backup/snapshot-check.js";
import {
  DAMAGES,
  damagedCopy,
  useCheckableDatabase,
} from "../../src/backup/test-support/damaged-databases.js";
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
    await checker.close();
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
    const damage = DAMAGES.find((d) => d.seenBy === "rows");
    const path = damagedCopy(base, join(tempDir(), "small.sqlite"), damage as never);
    const [small, missing] = await withChecker({ threads: 2 }, (checker) =>
      Promise.all([checker.check(path), checker.check(join(tempDir(), "gone.sqlite"))]),
    );
    expect(small?.integrityCheck).toMatch(/row \d+ missing from index t_a/);
    expect(missing?.integrityCheck).toMatch(/^cannot be checked: /);
  });
});
