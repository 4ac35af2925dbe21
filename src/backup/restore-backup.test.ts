import { randomBytes } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { openStateHome } from "../home.js";
import { describeHome } from "../status/describe-home.js";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { createBackup } from "./create-backup.js";
import { listBackups } from "./list-backups.js";
import { restoreBackup } from "./restore-backup.js";
import { gzipMembers, makeHome, rewrite } from "./test-support/archives.js";

const tempDir = useTempDirs();

function rowCounts(home: string) {
  const open = openStateHome({ home, create: false });
  try {
    return describeHome(open).databases.map((db) => [db.role, db.agentId, db.tables]);
  } finally {
    open.close();
  }
}

function modes(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      out.push(`${modeOf(stat).toString(8)} ${relative(root, path)}`);
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(root);
  return out;
}

async function backupOf(home: string): Promise<string> {
  return (await createBackup(home, { out: join(tempDir(), "b.tar.gz") })).archive;
}

describe("restoreBackup", () => {
  it("restores a tar.gz of several gzip members: bodies larger than a block come back whole", async () => {
    const source = makeHome(tempDir(), 200);
    const big = randomBytes(9 * 1024 * 1024 + 17);
    writeFileSync(join(source, "workspace.bin"), big);
    const archive = await backupOf(source);
    expect(gzipMembers(archive)).toBeGreaterThan(1);
    const target = join(tempDir(), "restored");
    await restoreBackup(archive, { home: target });
    expect(readFileSync(join(target, "workspace.bin")).equals(big)).toBe(true);
    expect(rowCounts(target)).toEqual(rowCounts(source));
  });

  it("rebuilds a home with the same agents and row counts, 0700 dirs and 0600 files", async () => {
    const source = makeHome(tempDir());
    const legacy = openRawSqlite(join(source, "legacy.sqlite"));
    legacy.exec("CREATE TABLE t (x); INSERT INTO t VALUES (42)");
    legacy.close();
    const archive = await backupOf(source);
    const target = join(tempDir(), "restored");
    const report = await restoreBackup(archive, { home: target });
    expect(report).toMatchObject({
      home: target,
      databases: 4,
      files: 2,
      agents: ["main", "research"],
      movedAside: [],
    });
    expect(rowCounts(target)).toEqual(rowCounts(source));
    expect(readFileSync(join(target, "credentials", "token"), "utf8")).toBe("secret\n");
    const restoredLegacy = openRawSqlite(join(target, "legacy.sqlite"), { readonly: true });
    expect(restoredLegacy.prepare("SELECT x FROM t").pluck().get()).toBe(42);
    restoredLegacy.close();
    for (const line of modes(target)) expect(line).toMatch(/^(700|600) /);
    expect(modeOf(lstatSync(target))).toBe(0o700);
    // The run that made the archive was still running in its own snapshot; restore closes it.
    expect(listBackups(target).map((run) => run.status)).toEqual(["succeeded"]);
    // The staging directory beside the target is gone.
    expect(readdirSync(join(target, ".."))).toEqual(["restored"]);
  });

  it("restores into an existing empty directory", async () => {
    const archive = await backupOf(makeHome(tempDir(), 1));
    const target = join(tempDir(), "empty");
    mkdirSync(target, { mode: 0o755 });
    await restoreBackup(archive, { home: target });
    expect(modeOf(lstatSync(target))).toBe(0o700);
    expect(rowCounts(target)).toHaveLength(3);
  });

  it("refuses a home that has databases, and changes nothing", async () => {
    const archive = await backupOf(makeHome(tempDir(), 1));
    const target = makeHome(tempDir(), 2);
    const before = rowCounts(target);
    await expect(restoreBackup(archive, { home: target })).rejects.toSatisfy(
      (e) =>
        isStateError(e, "E_CONFLICT") && /state\/state\.sqlite.*--force/.test((e as Error).message),
    );
    expect(rowCounts(target)).toEqual(before);
    expect(readdirSync(join(target, ".."))).toEqual(["home"]);
  });

  it("with force, moves the whole old home aside into backups/ instead of deleting it", async () => {
    const source = makeHome(tempDir(), 1);
    const archive = await backupOf(source);
    const target = makeHome(tempDir(), 3);
    const old = openStateHome({ home: target });
    old.kv.set("prefs", "theme", "old-value");
    old.close();
    writeFileSync(join(target, "notes-not-in-the-backup.txt"), "mine");
    mkdirSync(join(target, "backups"));
    writeFileSync(join(target, "backups", "older.tar.gz"), "an older archive");
    const report = await restoreBackup(archive, { home: target, force: true });
    const moved = report.movedAside.map((m) => relative(target, m.to));
    const aside = /^backups\/replaced-[\dT-]+Z\//;
    expect(moved.map((path) => path.replace(aside, ""))).toEqual([
      "agents",
      "config.json",
      "credentials",
      "notes-not-in-the-backup.txt",
      "state",
    ]);
    for (const path of moved) expect(path).toMatch(aside);
    expect(rowCounts(target)).toEqual(rowCounts(source));
    // The restored home holds what the archive holds, and keeps its backups.
    expect(existsSync(join(target, "notes-not-in-the-backup.txt"))).toBe(false);
    expect(readFileSync(join(target, "backups", "older.tar.gz"), "utf8")).toBe("an older archive");
    const state = report.movedAside.find((m) => m.from === join(target, "state"));
    const previous = openRawSqlite(join(state?.to as string, "state.sqlite"), {
      readonly: true,
    });
    expect(previous.prepare("SELECT value_json FROM kv WHERE key = 'theme'").pluck().get()).toBe(
      '"old-value"',
    );
    previous.close();
  });

  it("refuses files in the way, stale WAL files and symlinked directories without force", async () => {
    const archive = await backupOf(makeHome(tempDir(), 1));
    const withConfig = join(tempDir(), "a");
    mkdirSync(withConfig);
    writeFileSync(join(withConfig, "config.json"), "mine");
    await expect(restoreBackup(archive, { home: withConfig })).rejects.toThrow(
      /already has files the backup would replace \(config\.json\)/,
    );
    expect(readdirSync(withConfig)).toEqual(["config.json"]);

    const withWal = join(tempDir(), "b");
    mkdirSync(join(withWal, "state"), { recursive: true });
    writeFileSync(join(withWal, "state", "state.sqlite-wal"), "stale");
    await expect(restoreBackup(archive, { home: withWal })).rejects.toThrow(
      /state\/state\.sqlite-wal/,
    );

    const withLink = join(tempDir(), "c");
    mkdirSync(withLink);
    symlinkSync(tempDir(), join(withLink, "credentials"));
    await expect(restoreBackup(archive, { home: withLink })).rejects.toThrow(/\(credentials\)/);
  });

  it("verifies first: a tampered archive is refused and nothing is written", async () => {
    const archive = await backupOf(makeHome(tempDir(), 1));
    const bad = rewrite(archive, join(tempDir(), "bad.tar.gz"), (entries) => [
      { path: "../escape", body: Buffer.from("x") },
      ...entries,
    ]);
    const parent = join(tempDir(), "new", "parents");
    await expect(restoreBackup(bad, { home: join(parent, "home") })).rejects.toSatisfy(
      (e) =>
        isStateError(e, "E_CORRUPT") &&
        /refusing to restore .*entry "\.\.\/escape"/.test((e as Error).message),
    );
    expect(existsSync(join(parent, ".."))).toBe(false);
    expect(existsSync(join(parent, "..", "..", "escape"))).toBe(false);
  });

  it("rejects misuse", async () => {
    const archive = await backupOf(makeHome(tempDir(), 1));
    await expect(restoreBackup(archive, {} as never)).rejects.toThrow(TypeError);
    await expect(
      restoreBackup(archive, { home: tempDir(), forced: true } as never),
    ).rejects.toThrow(/Unknown option/);
  });
});
