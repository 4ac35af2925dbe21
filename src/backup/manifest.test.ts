import { isAbsolute, relative, resolve, sep } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { BACKUP_FORMAT, type BackupManifest, entryPathProblem } from "./manifest.js";
import { parseManifest } from "./manifest-parse.js";

const HASH = "a".repeat(64);

function manifest(overrides: Partial<BackupManifest> = {}): BackupManifest {
  return {
    format: BACKUP_FORMAT,
    formatVersion: 1,
    backupId: "b1",
    createdAt: 1,
    home: "/h",
    databases: [
      {
        role: "global",
        agentId: null,
        schemaVersion: 2,
        sourcePath: "/h/state/state.sqlite",
        homePath: "state/state.sqlite",
        snapshotPath: "databases/state/state.sqlite",
        bytes: 10,
        sha256: HASH,
        integrityCheck: "ok",
      },
      {
        role: "agent",
        agentId: "main",
        schemaVersion: 3,
        sourcePath: "/h/agents/main/agent/agent.sqlite",
        homePath: "agents/main/agent/agent.sqlite",
        snapshotPath: "databases/agents/main/agent/agent.sqlite",
        bytes: 10,
        sha256: HASH,
        integrityCheck: "ok",
      },
    ],
    files: [{ homePath: "config.json", archivePath: "files/config.json", bytes: 2, sha256: HASH }],
    skipped: [],
    ...overrides,
  };
}

function rejection(value: unknown): string {
  try {
    parseManifest(JSON.stringify(value));
  } catch (error) {
    expect(isStateError(error, "E_CORRUPT")).toBe(true);
    return (error as Error).message;
  }
  throw new Error("expected the manifest to be refused");
}

describe("entryPathProblem", () => {
  it.each([
    ["../escape", /\.\./],
    ["files/../../x", /\.\./],
    ["/etc/passwd", /absolute/],
    ["C:/x", /absolute/],
    ["files//x", /empty/],
    ["./files/x", /"\."/],
    ["files/x/", /empty/],
    ["", /empty/],
    ["a\0b", /NUL/],
  ])("refuses %j", (path, problem) => {
    expect(entryPathProblem(path)).toMatch(problem);
  });

  it("accepts ordinary relative names", () => {
    expect(entryPathProblem("files/agents/main/workspace/notes..txt")).toBeNull();
    expect(entryPathProblem("manifest.json")).toBeNull();
  });

  it("never accepts a name that resolves outside (or onto) the extraction root", () => {
    const root = resolve("/restore/root");
    const segment = fc.constantFrom("a", "..", ".", "", "b.c", "..x", "/", "\\", "x/..");
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 6 }), fc.boolean(), (parts, absolute) => {
        const name = `${absolute ? "/" : ""}${parts.join("/")}`;
        if (entryPathProblem(name) !== null) return;
        const inside = relative(root, resolve(root, name));
        const escapes = inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside);
        expect(inside === "" || escapes).toBe(false);
      }),
    );
  });
});

describe("parseManifest", () => {
  it("accepts a well-formed manifest and returns it unchanged", () => {
    expect(parseManifest(JSON.stringify(manifest()))).toEqual(manifest());
  });

  it("names the field at fault", () => {
    expect(rejection({ ...manifest(), format: "zip" })).toMatch(
      /format must be "agentstate-backup"/,
    );
    expect(rejection({ ...manifest(), formatVersion: 2 })).toMatch(
      /newer than this agentstate reads/,
    );
    expect(rejection("[]")).toMatch(/must be an object/);
    const [global, agent] = manifest().databases;
    const moved = {
      ...agent,
      homePath: "elsewhere.sqlite",
      snapshotPath: "databases/elsewhere.sqlite",
    };
    expect(rejection(manifest({ databases: [global as never, moved as never] }))).toMatch(
      /databases\[1\]\.homePath must be "agents\/main\/agent\/agent\.sqlite"/,
    );
    const renamed = { ...agent, snapshotPath: "databases/other" };
    expect(rejection(manifest({ databases: [global as never, renamed as never] }))).toMatch(
      /databases\[1\]\.snapshotPath/,
    );
    expect(rejection(manifest({ databases: [agent as never] }))).toMatch(/exactly one global/);
    const escaping = { homePath: "../x", archivePath: "files/../x", bytes: 1, sha256: HASH };
    expect(rejection(manifest({ files: [escaping] }))).toMatch(/files\[0\]\.homePath "\.\.\/x"/);
    const badHash = { homePath: "x", archivePath: "files/x", bytes: 1, sha256: "zz" };
    expect(rejection(manifest({ files: [badHash] }))).toMatch(/files\[0\]\.sha256/);
  });

  it("refuses a file that would land on a database's WAL", () => {
    const wal = {
      homePath: "state/state.sqlite-wal",
      archivePath: "files/state/state.sqlite-wal",
      bytes: 1,
      sha256: HASH,
    };
    expect(rejection(manifest({ files: [wal] }))).toMatch(/listed twice/);
  });

  it("reads a control-plane dump, whose paths an archive cannot choose", () => {
    const controlPlane = {
      backend: "postgres" as const,
      server: "ops@db:5432/cp",
      serverVersion: "15.18",
      pgDumpVersion: "15.18",
      homePath: "control-plane.sql",
      archivePath: "control-plane/postgres.sql",
      bytes: 100,
      sha256: HASH,
    };
    expect(parseManifest(JSON.stringify(manifest({ controlPlane })))).toEqual(
      manifest({ controlPlane }),
    );
    const elsewhere = { ...controlPlane, homePath: "state/evil.sql" };
    expect(rejection(manifest({ controlPlane: elsewhere }))).toMatch(
      /controlPlane\.homePath must be "control-plane\.sql"/,
    );
    const renamed = { ...controlPlane, archivePath: "files/x" };
    expect(rejection(manifest({ controlPlane: renamed }))).toMatch(/controlPlane\.archivePath/);
    const file = {
      homePath: "control-plane.sql",
      archivePath: "files/control-plane.sql",
      bytes: 1,
      sha256: HASH,
    };
    expect(rejection(manifest({ controlPlane, files: [file] }))).toMatch(/listed twice/);
  });

  it("reads an agent's cold index, which restores beside that agent's database and nowhere else", () => {
    const [global, agent] = manifest().databases;
    const coldIndex = {
      ...agent,
      role: "cold-index" as const,
      schemaVersion: 1,
      sourcePath: "/h/agents/main/agent/cold/index.sqlite",
      homePath: "agents/main/agent/cold/index.sqlite",
      snapshotPath: "databases/agents/main/agent/cold/index.sqlite",
    };
    const databases = [global, agent, coldIndex] as BackupManifest["databases"];
    expect(parseManifest(JSON.stringify(manifest({ databases })))).toEqual(manifest({ databases }));
    const withIndex = (cold: object) =>
      manifest({ databases: [...databases.slice(0, 2), cold as never] });
    const elsewhere = {
      ...coldIndex,
      homePath: "agents/main/agent/index.sqlite",
      snapshotPath: "databases/agents/main/agent/index.sqlite",
    };
    expect(rejection(withIndex(elsewhere))).toMatch(
      /databases\[2\]\.homePath must be "agents\/main\/agent\/cold\/index\.sqlite"/,
    );
    expect(rejection(withIndex({ ...coldIndex, agentId: null }))).toMatch(
      /databases\[2\]\.agentId/,
    );
    const asFile = {
      homePath: "agents/main/agent/cold/index.sqlite-journal",
      archivePath: "files/agents/main/agent/cold/index.sqlite-journal",
      bytes: 1,
      sha256: HASH,
    };
    expect(rejection(manifest({ databases, files: [asFile] }))).toMatch(/listed twice/);
    expect(rejection(withIndex({ ...coldIndex, role: "index" }))).toMatch(
      /databases\[2\]\.role must be one of "global", "agent", "cold-index", "other"/,
    );
  });

  it("refuses text that is not JSON", () => {
    expect(() => parseManifest("{")).toThrow(/manifest\.json is not valid: not JSON/);
  });
});
