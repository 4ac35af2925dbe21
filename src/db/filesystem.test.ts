import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../test-support/temp-dir.js";
import { openDatabase } from "./database.js";
import { isStateError } from "./errors.js";
import {
  assertWalSafe,
  filesystemTypeOf,
  resolveJournalMode,
  walUnsafeFilesystem,
} from "./filesystem.js";

const tempDir = useTempDirs();

// Magic numbers from statfs(2) and the kernel's magic.h, written out here rather than read from
// the module under test.
const UNSAFE: ReadonlyArray<[string, number]> = [
  ["NFS", 0x6969],
  ["SMB", 0x517b],
  ["CIFS", 0xff534d42],
  ["SMB2", 0xfe534d42],
  ["overlayfs", 0x794c7630],
  ["virtiofs", 0x6a656a63],
  ["9p", 0x01021997],
  ["FUSE", 0x65735546],
];
const SAFE: ReadonlyArray<[string, number]> = [
  ["ext4", 0xef53],
  ["xfs", 0x58465342],
  ["btrfs", 0x9123683e],
  ["zfs", 0x2fc12fc1],
  ["tmpfs", 0x01021994],
];

function refusal(fn: () => void): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return null;
}

describe("WAL on unsafe filesystems", () => {
  for (const [name, type] of UNSAFE) {
    it(`refuses WAL on ${name} with E_UNSAFE_FILESYSTEM naming it and the way out`, () => {
      const error = refusal(() => assertWalSafe("/mnt/share/home/state", type));
      expect(isStateError(error, "E_UNSAFE_FILESYSTEM")).toBe(true);
      const message = (error as Error).message;
      expect(message).toContain(name);
      expect(message).toContain("/mnt/share/home/state");
      expect(message).toContain("AGENTSTATE_JOURNAL_MODE=delete");
      expect(message).toContain('journalMode: "rollback"');
    });
  }

  for (const [name, type] of SAFE) {
    it(`allows WAL on ${name}`, () => {
      expect(walUnsafeFilesystem(type)).toBeNull();
      expect(() => assertWalSafe("/srv/home", type)).not.toThrow();
    });
  }

  it("allows WAL where the filesystem cannot be told", () => {
    expect(() => assertWalSafe("/srv/home", null)).not.toThrow();
  });

  it("reads the type of a real directory (this machine's temp dir is a local disk)", () => {
    const type = filesystemTypeOf(tempDir());
    expect(typeof type).toBe("number");
    expect(walUnsafeFilesystem(type)).toBeNull();
  });
});

describe("journal mode choice", () => {
  it("takes the option first, then AGENTSTATE_JOURNAL_MODE, else wal", () => {
    expect(resolveJournalMode(undefined, {})).toBe("wal");
    expect(resolveJournalMode(undefined, { AGENTSTATE_JOURNAL_MODE: "delete" })).toBe("rollback");
    expect(resolveJournalMode(undefined, { AGENTSTATE_JOURNAL_MODE: "WAL" })).toBe("wal");
    expect(resolveJournalMode("wal", { AGENTSTATE_JOURNAL_MODE: "delete" })).toBe("wal");
  });

  it("rejects an unknown value by name", () => {
    const error = refusal(() => resolveJournalMode(undefined, { AGENTSTATE_JOURNAL_MODE: "off" }));
    expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
    expect(() => resolveJournalMode("memory" as "wal", {})).toThrow(TypeError);
  });

  it("opens with a rollback journal: journal_mode is delete and no -wal file appears", () => {
    const path = join(tempDir(), "db.sqlite");
    const db = openDatabase({ path, role: "agent", journalMode: "rollback" });
    db.prepare("INSERT INTO kv VALUES ('s', 'k', '1', 1)").run();
    expect(db.pragma("journal_mode")).toBe("delete");
    expect(existsSync(`${path}-wal`)).toBe(false);
    db.close();
    const reader = openDatabase({ path, role: "agent", readonly: true, journalMode: "rollback" });
    expect(reader.pragma("journal_mode")).toBe("delete");
    expect(reader.prepare("SELECT value_json FROM kv").get()).toEqual({ value_json: "1" });
    reader.close();
  });

  it("switches an existing WAL database to the rollback journal and back", () => {
    const path = join(tempDir(), "db.sqlite");
    openDatabase({ path, role: "global" }).close();
    const rollback = openDatabase({ path, role: "global", journalMode: "rollback" });
    expect(rollback.pragma("journal_mode")).toBe("delete");
    rollback.close();
    const wal = openDatabase({ path, role: "global" });
    expect(wal.pragma("journal_mode")).toBe("wal");
    wal.close();
  });
});
