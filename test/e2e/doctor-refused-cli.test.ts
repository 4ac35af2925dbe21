import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { headerLine, messageLine } from "../../src/doctor/test-support/legacy-lines.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

/** A home whose good transcript imports and whose other sources are all refused. */
function hostileHome(): string {
  const home = tempDir();
  const sessions = join(home, "agents", "main", "sessions");
  mkdirSync(sessions, { recursive: true });
  writeFileSync(
    join(sessions, "good.jsonl"),
    `${headerLine("good")}\n${messageLine("m1", null, "hi")}\n`,
  );
  const outside = join(tempDir(), "elsewhere.jsonl");
  writeFileSync(outside, `${headerLine("linked")}\n`);
  symlinkSync(outside, join(sessions, "linked.jsonl"));
  execFileSync("mkfifo", [join(sessions, "pipe.jsonl")]);
  mkdirSync(join(home, "agents", "ops", "sessions"), { recursive: true });
  writeFileSync(join(home, "agents", "ops", "sessions", "sessions.json"), "[1, 2, 3]");
  return home;
}

describe("doctor --fix while sources are refused", () => {
  it("exits 1 on every run, also when nothing is left to import", () => {
    const home = hostileHome();
    const first = cli(["doctor", "--fix", "--home", home]);
    expect(first.status, first.stderr).toBe(1);
    const second = cli(["doctor", "--fix", "--home", home]);
    expect(second.status, second.stdout).toBe(1);
    expect(second.stdout).toMatch(/nothing-to-do/);
    for (const path of ["linked.jsonl", "pipe.jsonl", "sessions.json"])
      expect(second.stdout).toContain(path);
    const json = cli(["doctor", "--fix", "--json", "--home", home]);
    expect(json.status).toBe(1);
    const report = JSON.parse(json.stdout) as { sources: { status: string }[] };
    expect(report.sources.filter((s) => s.status === "refused")).toHaveLength(3);
  }, 60_000);
});
