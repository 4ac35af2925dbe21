import { spawn } from "node:child_process";
import { mkdirSync, watch } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";
import { requireBuild } from "../support/built.js";

const RUNNER = new URL("../fixtures/doctor-runner.mjs", import.meta.url).pathname;
const tempDir = useTempDirs();
beforeAll(requireBuild);

/** Runs the import in a process whose SQLite temp directory is `tmp`; returns what appeared there. */
function importWatching(
  home: string,
  tmp: string,
): Promise<{ code: number | null; created: string[] }> {
  const created: string[] = [];
  // inotify sees a temp file even though SQLite unlinks it right after opening it.
  const watcher = watch(tmp, (_event, name) => created.push(String(name)));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUNNER, home], {
      stdio: "ignore",
      env: { ...process.env, SQLITE_TMPDIR: tmp, TMPDIR: tmp },
    });
    child.on("exit", (code) => {
      setTimeout(() => {
        watcher.close();
        resolve({ code, created });
      }, 200);
    });
  });
}

describe("doctor --fix and SQLite temp files", () => {
  it("a large import writes no temp file outside the home", async () => {
    const home = join(tempDir(), "home");
    generateLegacyHome(home, { agents: 2, sessions: 10, events: 100, bigTranscriptMb: 3 });
    const tmp = join(tempDir(), "sqlite-tmp");
    mkdirSync(tmp);
    const { code, created } = await importWatching(home, tmp);
    expect(code).toBe(0);
    expect(created).toEqual([]);
  }, 120_000);
});
