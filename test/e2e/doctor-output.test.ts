// doctor's text output as an operator reads it: a summary per kind, only the files with problems
// unless --verbose, and nothing wider than 100 columns unless --full.
import { appendFileSync, cpSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { PROJECT_ROOT, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
const fileRow = /^(imported|skipped|warning|failed|refused)\s+[a-z-]+\s+\d+\s+(yes|no)\s/;
const SAMPLE = join(PROJECT_ROOT, "examples", "legacy-home");
beforeAll(requireBuild);

interface FixJson {
  sources: Array<{ kind: string; status: string; path: string; records: number }>;
}

/** The sample home, with one transcript given a very long name and a broken line. */
function sampleHome(): { home: string; broken: string } {
  const home = join(tempDir(), "home");
  cpSync(SAMPLE, home, { recursive: true });
  const sessions = join(home, "agents", "main", "sessions");
  // A transcript with no writer lock beside it (a renamed one would leave its lock behind).
  const names = readdirSync(sessions);
  const name = names.find((n) => n.endsWith(".jsonl") && !names.includes(`${n}.lock`)) as string;
  const long = `${name.replace(".jsonl", "")}-with-a-name-long-enough-to-overflow-any-table.jsonl`;
  renameSync(join(sessions, name), join(sessions, long));
  appendFileSync(join(sessions, long), "{ broken\n");
  return { home, broken: `agents/main/sessions/${long}` };
}

function widest(text: string): number {
  return Math.max(...text.split("\n").map((line) => Array.from(line).length));
}

describe("agentstate doctor output", () => {
  it("plan and --fix fit 100 columns; --full shows paths whole", () => {
    const { home, broken } = sampleHome();
    const plan = cli(["doctor", "--home", home]);
    expect(plan.status).toBe(0);
    expect(widest(plan.stdout)).toBeLessThanOrEqual(100);
    expect(plan.stdout).not.toContain(broken);
    const full = cli(["doctor", "--home", home, "--full"]);
    expect(full.stdout).toContain(broken);
    expect(widest(full.stdout)).toBeGreaterThan(100);
  });

  it("--fix prints counts per kind, then only the files with problems; --verbose lists every file", () => {
    const { home, broken } = sampleHome();
    const copy = join(tempDir(), "copy");
    cpSync(home, copy, { recursive: true });
    const json = cli(["doctor", "--fix", "--json", "--home", copy]);
    const report = JSON.parse(json.stdout) as FixJson;

    const result = cli(["doctor", "--fix", "--home", home]);
    expect(result.status).toBe(1);
    expect(widest(result.stdout)).toBeLessThanOrEqual(100);
    // Every kind's counts, computed from the JSON report of the same import of a copy.
    const kinds = new Set(report.sources.filter((s) => s.status !== "left").map((s) => s.kind));
    for (const kind of kinds) {
      const of = report.sources.filter((s) => s.kind === kind);
      const n = (status: string) => of.filter((s) => s.status === status).length;
      const records = of.reduce((sum, s) => sum + s.records, 0);
      expect(result.stdout).toMatch(
        new RegExp(
          `^${kind}\\s+${n("imported")}\\s+${n("skipped")}\\s+${n("warning")}\\s+${n("failed")}\\s+${n("refused")}\\s+${records}\\s`,
          "m",
        ),
      );
    }
    const rows = result.stdout.split("\n").filter((line) => fileRow.test(line));
    expect(rows, result.stdout).toHaveLength(1);
    expect(rows[0]).toMatch(/^warning\s+transcript\s/);
    expect(result.stdout).toMatch(/^ {2}agents\/main\/sessions\/.*:\d+: /m);

    const verbose = cli(["doctor", "--fix", "--verbose", "--home", home]);
    const listed = verbose.stdout.split("\n").filter((line) => fileRow.test(line));
    const again = JSON.parse(cli(["doctor", "--fix", "--json", "--home", copy]).stdout) as FixJson;
    expect(listed).toHaveLength(again.sources.filter((s) => s.status !== "left").length);
    expect(verbose.stdout).not.toContain(broken);
    expect(cli(["doctor", "--fix", "--verbose", "--full", "--home", home]).stdout).toContain(
      broken,
    );
  });
});
