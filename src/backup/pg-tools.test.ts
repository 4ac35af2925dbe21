import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../test-support/temp-dir.js";
import { findPgTool, pgEnv, pgTarget, scrub, versionMismatch } from "./pg-tools.js";

const tempDir = useTempDirs();

function tool(dir: string, name: string, mode = 0o755): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, "#!/bin/sh\n");
  chmodSync(file, mode);
  return file;
}

describe("findPgTool", () => {
  it("takes PATH first, then Debian's version directories, newest major version first", () => {
    const root = tempDir();
    const versions = join(root, "postgresql");
    tool(join(versions, "9", "bin"), "pg_dump");
    const v16 = tool(join(versions, "16", "bin"), "pg_dump");
    tool(join(versions, "13", "bin"), "pg_dump");
    mkdirSync(join(versions, "common", "bin"), { recursive: true });
    expect(findPgTool("pg_dump", { path: [], versionsRoot: versions })).toBe(v16);
    const onPath = tool(join(root, "bin"), "pg_dump");
    expect(findPgTool("pg_dump", { path: [join(root, "bin")], versionsRoot: versions })).toBe(
      onPath,
    );
  });

  it("skips files that are not executable, and finds nothing where there is nothing", () => {
    const root = tempDir();
    tool(join(root, "bin"), "psql", 0o644);
    const search = { path: [join(root, "bin")], versionsRoot: join(root, "missing") };
    expect(findPgTool("psql", search)).toBeNull();
    expect(findPgTool("pg_dump", search)).toBeNull();
  });
});

describe("pgTarget", () => {
  it("takes the password out of the URL the tool sees and the name people see", () => {
    const target = pgTarget("postgres://ops:s%40cret%2F1@db.internal:6432/cp?sslmode=require", "x");
    expect(target.password).toBe("s@cret/1");
    expect(target.dbname).toBe("postgres://ops@db.internal:6432/cp?sslmode=require");
    expect(target.server).toBe("ops@db.internal:6432/cp");
    expect(pgEnv(target).PGPASSWORD).toBe("s@cret/1");
  });

  it("also takes a password given as a query parameter", () => {
    const target = pgTarget("postgresql://ops@db/cp?password=hunter2&application_name=a", "x");
    expect(target.password).toBe("hunter2");
    expect(target.dbname).not.toContain("hunter2");
    expect(scrub("FATAL: bad hunter2\nagain", target)).toBe("FATAL: bad …; again");
  });

  it("refuses anything but a postgres URL, without echoing it", () => {
    expect(() => pgTarget("mysql://root:pw@db/x", "--control-plane")).toThrow(
      /^--control-plane must be a postgres:\/\/ or postgresql:\/\/ URL$/,
    );
  });
});

describe("versionMismatch", () => {
  it("reads the versions from pg_dump's refusal of a newer server", () => {
    // As pg_dump 15 words it (pg_backup_db.c), once the message's lines are joined by scrub().
    const stderr =
      "pg_dump: error: aborting because of server version mismatch; pg_dump: detail: server version: 17.2 (Debian 17.2-1.pgdg120+1); pg_dump version: 15.18 (Debian 15.18-0+deb12u1)";
    expect(versionMismatch(stderr)).toEqual({ server: "17.2", tool: "15.18" });
    const plain =
      "pg_dump: error: aborting because of server version mismatch; pg_dump: detail: server version: 16.4; pg_dump version: 15.8";
    expect(versionMismatch(plain)).toEqual({ server: "16.4", tool: "15.8" });
    expect(versionMismatch("pg_dump: error: connection to server failed")).toBeNull();
  });
});
