import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { makeHome, rewrite } from "../../src/backup/test-support/archives.js";
import { formatBytes } from "../../src/cli/output.js";
import { modeOf, useTempDirs } from "../../src/test-support/temp-dir.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

interface StatusJson {
  databases: Array<{ role: string; agentId: string | null; tables: Record<string, number> }>;
}

function counts(home: string) {
  const result = cli(["status", "--home", home, "--json"]);
  expect(result.status, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as StatusJson).databases.map((d) => [
    d.role,
    d.agentId,
    d.tables,
  ]);
}

function create(home: string, ...args: string[]): string {
  const result = cli(["backup", "create", "--home", home, "--json", ...args]);
  expect(result.status, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { archive: string }).archive;
}

function allModes(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: "utf8" }).map((name) => {
    const path = join(root, name);
    return `${modeOf(lstatSync(path)).toString(8)} ${relative(root, path)}`;
  });
}

describe("agentstate backup --help", () => {
  for (const command of [
    ["backup"],
    ["backup", "create"],
    ["backup", "verify"],
    ["backup", "restore"],
    ["backup", "list"],
    ["backup", "prune"],
  ]) {
    it(`documents ${command.join(" ")}`, () => {
      const result = cli([...command, "--help"]);
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/Usage: agentstate backup/);
      if (command.length > 1) expect(result.stdout).toContain("--json");
    });
  }
});

describe("agentstate backup", () => {
  it("create, list, verify, restore: the restored home has the same agents and row counts", () => {
    const home = makeHome(tempDir());
    const made = cli(["backup", "create", "--home", home]);
    expect(made.status, made.stderr).toBe(0);
    expect(made.stdout).toMatch(
      /^global\s+-\s+[\d.]+ KiB\s+[0-9a-f]{12}\s+ok\s+state\/state\.sqlite$/m,
    );
    expect(made.stdout).toMatch(/^agent\s+main\s+.*ok/m);

    const listed = cli(["backup", "list", "--home", home, "--json"]);
    const [run] = JSON.parse(listed.stdout) as Array<{ archive: string; status: string }>;
    expect(run?.status).toBe("succeeded");
    const archive = run?.archive as string;
    expect(modeOf(lstatSync(archive))).toBe(0o600);
    const size = statSync(archive).size;
    expect(cli(["backup", "list", "--home", home]).stdout).toMatch(
      new RegExp(`succeeded\\s+3\\s+2\\s+${formatBytes(size).replace(".", "\\.")}\\s+backups/`),
    );

    const verified = cli(["backup", "verify", archive]);
    expect(verified.status, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/ok: 6 entries verified/);

    const target = join(tempDir(), "restored");
    const restored = cli(["backup", "restore", archive, "--home", target]);
    expect(restored.status, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(/agents: main, research/);
    expect(counts(target)).toEqual(counts(home));
    for (const line of allModes(target)) expect(line).toMatch(/^(600|700) /);
    expect(readFileSync(join(target, "config.json"), "utf8")).toBe(
      readFileSync(join(home, "config.json"), "utf8"),
    );
  });

  it("writes archives the system tar lists and extracts, compressed or not", () => {
    const home = makeHome(tempDir(), 1);
    writeFileSync(join(home, "notes.bin"), randomBytes(5 * 1024 * 1024));
    for (const args of [[], ["--no-compress"]]) {
      const name = args.length > 0 ? "b.tar" : "b.tar.gz";
      const archive = create(home, "--out", join(tempDir(), name), ...args);
      const names = execFileSync("tar", ["-tf", archive], { encoding: "utf8" }).split("\n");
      expect(names).toEqual(expect.arrayContaining(["manifest.json", "files/notes.bin"]));
      const out = tempDir();
      execFileSync("tar", ["-xf", archive, "-C", out]);
      expect(
        readFileSync(join(out, "files/notes.bin")).equals(readFileSync(join(home, "notes.bin"))),
      ).toBe(true);
    }
  });

  it("--no-compress writes a plain tar; --out names it", () => {
    const home = makeHome(tempDir(), 1);
    const out = join(tempDir(), "plain.tar");
    expect(create(home, "--out", out, "--no-compress")).toBe(out);
    expect(readFileSync(out).subarray(0, 2).toString("hex")).not.toBe("1f8b");
    const result = cli(["backup", "verify", out, "--json"]);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, compressed: false });
  });

  it("a tampered archive fails verify (exit 4, naming the entry) and restore writes nothing", () => {
    const archive = create(makeHome(tempDir(), 1));
    const dir = tempDir();
    const bad = rewrite(archive, join(dir, "bad.tar.gz"), (entries) => [
      ...entries.slice(0, -1),
      { path: "../escape", body: Buffer.from("gotcha") },
      ...entries.slice(-1),
    ]);
    const verified = cli(["backup", "verify", bad]);
    expect(verified.status).toBe(4);
    expect(verified.stdout).toMatch(/FAILED/);
    expect(verified.stderr).toMatch(
      /backup verification failed: entry "\.\.\/escape": the path has a "\.\." segment/,
    );

    const json = cli(["backup", "verify", bad, "--json"]);
    expect(json.status).toBe(4);
    expect(JSON.parse(json.stdout).firstProblem).toMatch(/\.\.\/escape/);

    const target = join(dir, "target");
    const restored = cli(["backup", "restore", bad, "--home", target]);
    expect(restored.status).toBe(4);
    expect(restored.stderr).toMatch(/refusing to restore/);
    expect(readdirSync(dir)).toEqual(["bad.tar.gz"]);

    const cut = join(dir, "cut.tar.gz");
    writeFileSync(cut, readFileSync(archive).subarray(0, 2000));
    const truncated = cli(["backup", "verify", cut]);
    expect(truncated.status).toBe(4);
    expect(truncated.stderr).toMatch(/truncated or corrupt/);
  });

  it("restore refuses a home with databases (exit 5); --force moves them aside", () => {
    const source = makeHome(tempDir(), 2);
    const archive = create(source);
    const target = makeHome(tempDir(), 5);
    const refused = cli(["backup", "restore", archive, "--home", target]);
    expect(refused.status).toBe(5);
    expect(refused.stderr).toMatch(/already has databases .*--force/);

    const forced = cli(["backup", "restore", archive, "--home", target, "--force", "--json"]);
    expect(forced.status, forced.stderr).toBe(0);
    const report = JSON.parse(forced.stdout) as { movedAside: Array<{ to: string }> };
    expect(report.movedAside.length).toBeGreaterThanOrEqual(3);
    for (const moved of report.movedAside) expect(existsSync(moved.to)).toBe(true);
    expect(counts(target)).toEqual(counts(source));
  });

  it("errors name what is missing", () => {
    const missing = cli(["backup", "verify", join(tempDir(), "nope.tar.gz")]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toMatch(/no backup archive at/);
    expect(cli(["backup", "create", "--home", join(tempDir(), "nohome")]).status).toBe(3);
    expect(cli(["backup", "restore", "x.tar.gz"]).stderr).toMatch(/--home/);
  });
});

describe("agentstate backup verify on damage, and prune", () => {
  it("a damaged archive: the first bad entry and a short summary, never long lines (exit 4)", () => {
    const home = makeHome(tempDir(), 200);
    const archive = create(home, "--out", join(tempDir(), "a.tar"), "--no-compress");
    const bytes = readFileSync(archive);
    // Damage the body of the first snapshot (it follows its 512-byte header), not the tar framing.
    bytes.fill(0x41, 512 + 4096, 512 + 4096 * 8);
    const bad = join(tempDir(), "bad.tar");
    writeFileSync(bad, bytes);
    const result = cli(["backup", "verify", bad]);
    expect(result.status).toBe(4);
    expect(result.stdout).toMatch(/^FAILED: \d+ problems?, 1 of 6 entries bad$/m);
    expect(result.stdout).toMatch(/entry "databases\/[^"]+": SHA-256 mismatch/);
    for (const line of `${result.stdout}${result.stderr}`.split("\n"))
      expect(line.length, line).toBeLessThanOrEqual(200);
    const full = cli(["backup", "verify", bad, "--full"]);
    expect(full.status).toBe(4);
    expect(full.stdout.length).toBeGreaterThanOrEqual(result.stdout.length);
  });

  it("a file that is not an archive: one line, exit 4", () => {
    const file = join(tempDir(), "notes.txt");
    writeFileSync(file, "hello\n");
    const result = cli(["backup", "verify", file]);
    expect(result.status).toBe(4);
    expect(result.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(/^not a backup archive: .*notes\.txt: /),
    ]);
  });

  it("prune --keep N deletes the oldest archives in backups/, pre-migration ones included", () => {
    const home = join(tempDir(), "legacy");
    generateLegacyHome(home, { agents: 1, sessions: 2, events: 3 });
    expect(cli(["doctor", "--fix", "--home", home]).status).toBe(0);
    const elsewhere = create(home, "--out", join(tempDir(), "mine.tar.gz"));
    const second = create(home);
    const newest = create(home);
    const listed = JSON.parse(cli(["backup", "list", "--home", home, "--json"]).stdout) as Array<{
      archive: string;
      bytes: number;
    }>;
    expect(listed).toHaveLength(4);
    const preMigration = listed[3]?.archive as string;
    for (const run of listed) expect(run.bytes).toBe(statSync(run.archive).size);

    const dry = cli(["backup", "prune", "--keep", "2", "--dry-run", "--home", home, "--json"]);
    expect(dry.status, dry.stderr).toBe(0);
    const planned = JSON.parse(dry.stdout) as { deleted: Array<{ archive: string }> };
    expect(planned.deleted.map((d) => d.archive)).toEqual([preMigration]);
    expect(existsSync(preMigration)).toBe(true);

    const pruned = cli(["backup", "prune", "--keep", "1", "--home", home]);
    expect(pruned.status, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/^kept 1 newest, deleted 2 \(/);
    expect(pruned.stdout).toContain(`kept ${elsewhere}: outside`);
    expect([newest, elsewhere].every(existsSync)).toBe(true);
    expect([second, preMigration].some(existsSync)).toBe(false);
    expect(cli(["backup", "list", "--home", home]).stdout).toMatch(/\(gone\)/);
    expect(cli(["backup", "prune", "--keep", "0", "--home", home]).status).toBe(2);
  });
});
