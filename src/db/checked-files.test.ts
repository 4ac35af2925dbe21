import { copyFileSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { openDatabase } from "./database.js";
import { isStateError } from "./errors.js";
import { openRawSqlite } from "./test-support/raw-sqlite.js";

const tempDir = useTempDirs();

/** Opens and closes `path` `times` times: the second open onwards is a reopen of a checked file. */
function openTimes(path: string, times: number): void {
  for (let i = 0; i < times; i++) openDatabase({ path, role: "agent" }).close();
}

describe("reopening a file this process already checked", () => {
  it("still gets every connection pragma, WAL from the file header, and 0600 sidecars", () => {
    const path = join(tempDir(), "db.sqlite");
    openTimes(path, 2);
    const db = openDatabase({ path, role: "agent" });
    try {
      expect(db.pragma("journal_mode")).toBe("wal");
      expect(db.pragma("synchronous")).toBe(1);
      expect(db.pragma("busy_timeout")).toBe(30000);
      expect(db.pragma("foreign_keys")).toBe(1);
      expect(db.pragma("journal_size_limit")).toBe(64 * 1024 * 1024);
      db.prepare("CREATE TABLE t (x)").run();
      expect(modeOf(statSync(`${path}-wal`))).toBe(0o600);
      expect(modeOf(statSync(`${path}-shm`))).toBe(0o600);
    } finally {
      db.close();
    }
  });

  it("checks a file put in its place (another inode) again: an edited migration is refused", () => {
    const dir = tempDir();
    const path = join(dir, "db.sqlite");
    openTimes(path, 2);
    const edited = join(dir, "edited.sqlite");
    copyFileSync(path, edited);
    const raw = openRawSqlite(edited, { fileMustExist: true });
    raw.prepare("UPDATE schema_migrations SET sha256 = 'edited' WHERE version = 1").run();
    raw.close();
    const before = statSync(path).ino;
    renameSync(edited, path);
    expect(statSync(path).ino).not.toBe(before);
    try {
      openDatabase({ path, role: "agent" }).close();
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_SCHEMA_MISMATCH")).toBe(true);
    }
  });

  it("checks a file again when its version moved (a restore of an older copy in place)", () => {
    const path = join(tempDir(), "db.sqlite");
    openTimes(path, 2);
    const raw = openRawSqlite(path, { fileMustExist: true });
    const latest = raw.pragma("user_version", { simple: true }) as number;
    raw.prepare("UPDATE schema_migrations SET sha256 = 'edited' WHERE version = 1").run();
    raw.pragma(`user_version = ${latest - 1}`);
    raw.prepare(`DELETE FROM schema_migrations WHERE version = ${latest}`).run();
    raw.close();
    try {
      openDatabase({ path, role: "agent" }).close();
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_SCHEMA_MISMATCH")).toBe(true);
    }
  });
});
