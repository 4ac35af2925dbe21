import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { openStateHome } from "../home.js";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { createBackup } from "./create-backup.js";
import { listBackups } from "./list-backups.js";
import type { BackupManifest } from "./manifest.js";
import { makeHome, readEntries } from "./test-support/archives.js";
import { verifyBackup } from "./verify-backup.js";

const tempDir = useTempDirs();

function manifestOf(file: string): BackupManifest {
  const entry = readEntries(file).find((e) => e.path === "manifest.json");
  return JSON.parse(entry?.body.toString("utf8") ?? "null") as BackupManifest;
}

describe("createBackup", () => {
  it("archives a snapshot of every database, the home's files and a manifest, owner-only", async () => {
    const home = makeHome(tempDir());
    const report = await createBackup(home);
    expect(report.archive).toMatch(/\/backups\/\d{4}-\d\d-\d\dT[\d-]+Z\.tar\.gz$/);
    expect(modeOf(statSync(report.archive))).toBe(0o600);
    expect(modeOf(statSync(join(home, "backups")))).toBe(0o700);
    expect(report).toMatchObject({ ok: true, compressed: true });
    const names = readEntries(report.archive).map((e) => e.path);
    expect(names).toEqual([
      "databases/state/state.sqlite",
      "databases/agents/main/agent/agent.sqlite",
      "databases/agents/research/agent/agent.sqlite",
      "files/config.json",
      "files/credentials/token",
      "manifest.json",
    ]);
    const manifest = manifestOf(report.archive);
    expect(manifest).toEqual(report.manifest);
    expect(manifest.databases.map((d) => [d.role, d.agentId, d.integrityCheck])).toEqual([
      ["global", null, "ok"],
      ["agent", "main", "ok"],
      ["agent", "research", "ok"],
    ]);
    expect(manifest.databases[1]).toMatchObject({
      sourcePath: join(home, "agents/main/agent/agent.sqlite"),
      homePath: "agents/main/agent/agent.sqlite",
      snapshotPath: "databases/agents/main/agent/agent.sqlite",
    });
    // Nothing but the archive is left beside it.
    expect(readdirSync(join(home, "backups"))).toEqual([report.archive.split("/").pop()]);
  });

  it("records the run and lists it", async () => {
    const home = makeHome(tempDir(), 1);
    const report = await createBackup(home);
    expect(listBackups(home)).toEqual([
      {
        id: report.id,
        createdAt: report.createdAt,
        archive: report.archive,
        status: "succeeded",
        archiveExists: true,
        bytes: statSync(report.archive).size,
        databases: 3,
        files: 2,
        error: null,
      },
    ]);
  });

  it("leaves the home's own connections as durable as it found them", async () => {
    const home = openStateHome({ home: makeHome(tempDir(), 1) });
    try {
      const report = await createBackup(home, { compress: false, out: join(tempDir(), "b.tar") });
      expect(report.ok).toBe(true);
      // The snapshots are written unsynced; the live databases stay synchronous=NORMAL (1).
      expect(home.db.pragma("synchronous")).toBe(1);
      expect(home.agent("main").db.pragma("synchronous")).toBe(1);
      home.agent("main").kv.set("notes", "after", { ok: true });
      expect(home.agent("main").kv.get("notes", "after")).toEqual({ ok: true });
    } finally {
      home.close();
    }
  });

  it("leaves out backups/, live WAL files and links; snapshots other SQLite files", async () => {
    const home = makeHome(tempDir(), 1);
    await createBackup(home);
    symlinkSync("/etc/hostname", join(home, "link"));
    writeFileSync(join(home, "notes.sqlite-wal"), "stray wal");
    const legacy = openRawSqlite(join(home, "legacy.sqlite"));
    legacy.pragma("journal_mode = WAL");
    legacy.exec("CREATE TABLE t (x); INSERT INTO t VALUES (42)");
    const open = openStateHome({ home, create: false });
    open.kv.set("live", "k", 1); // the global DB is open, with a WAL, while the backup runs
    const report = await createBackup(open, { out: join(tempDir(), "out.tar.gz") });
    open.close();
    legacy.close();
    const names = readEntries(report.archive).map((e) => e.path);
    expect(
      names.filter((n) => n.includes("backups/") || n.endsWith("-wal") || n.endsWith("-shm")),
    ).toEqual([]);
    expect(names).toContain("databases/legacy.sqlite");
    expect(report.manifest.databases.find((d) => d.homePath === "legacy.sqlite")).toMatchObject({
      role: "other",
      agentId: null,
      integrityCheck: "ok",
    });
    expect(report.manifest.skipped).toEqual([
      { homePath: "link", reason: "symbolic link (not followed)" },
    ]);
  });

  it("streams a large file and records its hash", async () => {
    const home = makeHome(tempDir(), 1);
    const big = randomBytes(6 * 1024 * 1024 + 5);
    writeFileSync(join(home, "big.jsonl.bak"), big);
    const report = await createBackup(home, { compress: false, out: join(tempDir(), "b.tar") });
    const file = report.manifest.files.find((f) => f.homePath === "big.jsonl.bak");
    expect(file?.bytes).toBe(big.length);
    const body = readEntries(report.archive).find((e) => e.path === "files/big.jsonl.bak")?.body;
    expect(body?.equals(big)).toBe(true);
    expect(readFileSync(report.archive).subarray(0, 2).toString("hex")).not.toBe("1f8b");
  });

  it("keeps long and non-ASCII names exactly (PAX headers) and verifies them", async () => {
    const home = makeHome(tempDir(), 1);
    const deep = join("workspace", "a".repeat(60), "b".repeat(60), "notes – été ✓.md");
    mkdirSync(join(home, deep, ".."), { recursive: true });
    writeFileSync(join(home, deep), "deep");
    const report = await createBackup(home, { out: join(tempDir(), "long.tar.gz") });
    expect(readEntries(report.archive).map((e) => e.path)).toContain(`files/${deep}`);
    expect(await verifyBackup(report.archive)).toMatchObject({ ok: true });
  });

  it("refuses an existing output and misspelled options", async () => {
    const home = makeHome(tempDir(), 1);
    const out = join(tempDir(), "taken.tar.gz");
    writeFileSync(out, "mine");
    await expect(createBackup(home, { out })).rejects.toSatisfy((e) =>
      isStateError(e, "E_CONFLICT"),
    );
    expect(readFileSync(out, "utf8")).toBe("mine");
    await expect(createBackup(home, { output: out } as never)).rejects.toThrow(
      /Unknown option for createBackup: output/,
    );
    await expect(createBackup(join(tempDir(), "nohome"))).rejects.toSatisfy((e) =>
      isStateError(e, "E_NOT_FOUND"),
    );
  });

  it("marks a failed run failed and leaves no partial archive or temp files", async () => {
    const home = makeHome(tempDir(), 1);
    const dir = tempDir();
    const out = join(dir, "x.tar.gz");
    const onProgress = (event: { phase: string }) => {
      if (event.phase === "archive") throw new Error("disk on fire");
    };
    await expect(createBackup(home, { out, onProgress })).rejects.toThrow("disk on fire");
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(out)).toBe(false);
    const [run] = listBackups(home);
    expect(run).toMatchObject({ status: "failed", error: "disk on fire", archiveExists: false });
  });
});
