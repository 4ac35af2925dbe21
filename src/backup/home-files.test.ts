import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { inventoryHome } from "./home-files.js";

const tempDir = useTempDirs();

describe("inventoryHome", () => {
  it("sorts the home into files, other databases and skipped paths", () => {
    const home = tempDir();
    mkdirSync(join(home, "backups"));
    writeFileSync(join(home, "backups", "old.tar.gz"), "old backup");
    mkdirSync(join(home, "agents", "main", "sessions"), { recursive: true });
    writeFileSync(join(home, "agents", "main", "sessions", "s1.jsonl"), "{}\n");
    writeFileSync(join(home, "notes"), "plain text");
    writeFileSync(join(home, "notes-journal"), "a file, not a sidecar: notes is no database");
    const db = openRawSqlite(join(home, "plugin.db"));
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE t (x)");
    writeFileSync(join(home, "orphan.sqlite-shm"), "stray");
    symlinkSync(join(home, "notes"), join(home, "link"));
    writeFileSync(join(home, "live.sqlite"), "excluded by the caller");
    const inventory = inventoryHome(home, new Set([join(home, "live.sqlite")]));
    db.close();

    expect(inventory.files.map((f) => f.homePath)).toEqual([
      "agents/main/sessions/s1.jsonl",
      "notes",
      "notes-journal",
    ]);
    expect(inventory.files[1]).toMatchObject({ path: join(home, "notes"), bytes: 10 });
    expect(inventory.databases.map((f) => f.homePath)).toEqual(["plugin.db"]);
    expect(inventory.skipped).toEqual([
      { homePath: "link", reason: "symbolic link (not followed)" },
    ]);
  });

  it("records special files as skipped", async () => {
    const home = tempDir();
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(home, "gateway.sock"), resolve));
    try {
      expect(inventoryHome(home, new Set()).skipped).toEqual([
        { homePath: "gateway.sock", reason: "not a regular file" },
      ]);
    } finally {
      server.close();
    }
  });
});
