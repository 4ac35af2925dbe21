// Every path that writes a database file leaves one whose freelist can be given back in steps.
import { closeSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/create-backup.js";
import { restoreBackup } from "../../src/backup/restore-backup.js";
import { openDatabase } from "../../src/db/database.js";
import { salvageDatabase } from "../../src/doctor/salvage.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";

const tempDir = useTempDirs();

/**
 * The auto-vacuum mode as the file header says it (the file format's own fields, not a pragma):
 * bytes 52-55 are the largest root page (0 without auto-vacuum), 64-67 the incremental flag.
 */
function headerAutoVacuum(path: string): "none" | "full" | "incremental" {
  const header = Buffer.alloc(100);
  const fd = openSync(path, "r");
  try {
    readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (header.readUInt32BE(52) === 0) return "none";
  return header.readUInt32BE(64) === 1 ? "incremental" : "full";
}

function homeFiles(home: string): string[] {
  return [
    join(home, "state", "state.sqlite"),
    join(home, "agents", "main", "agent", "agent.sqlite"),
  ];
}

describe("new database files", () => {
  it("are created with incremental auto-vacuum, global and agent", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    state.agent("main").kv.set("s", "k", 1);
    state.close();
    for (const path of homeFiles(home)) expect(headerAutoVacuum(path), path).toBe("incremental");
  });

  it("a salvaged database is incremental too", () => {
    const path = join(tempDir(), "agent.sqlite");
    const db = openDatabase({ path, role: "agent" });
    db.exec("INSERT INTO kv VALUES ('s', 'k', '1', 1)");
    db.close();
    salvageDatabase(path, "agent");
    expect(headerAutoVacuum(path)).toBe("incremental");
  });

  it("backup snapshots (VACUUM INTO) keep it, and so does a restored home", async () => {
    const home = tempDir();
    const state = openStateHome({ home });
    state.agent("main").kv.set("s", "k", 1);
    const archive = join(tempDir(), "b.tar.gz");
    await createBackup(state, { out: archive });
    state.close();
    const target = join(tempDir(), "restored");
    await restoreBackup(archive, { home: target });
    for (const path of homeFiles(target)) expect(headerAutoVacuum(path), path).toBe("incremental");
  });
});
