import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { isStateError } from "../db/errors.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createBackup } from "./create-backup.js";
import { type BackupManifest, MANIFEST_ENTRY } from "./manifest.js";
import { makeHome, type RawEntry, replaceBody, rewrite } from "./test-support/archives.js";
import { verifyBackup } from "./verify-backup.js";

const tempDir = useTempDirs();
const AGENT = "databases/agents/main/agent/agent.sqlite";
let archive: string;
let work: string;

beforeAll(async () => {
  // One genuine archive for every case, in a directory of its own: useTempDirs empties per test.
  work = mkdtempSync(join(tmpdir(), "agentstate-verify-test-"));
  archive = (await createBackup(makeHome(work), { out: join(work, "good.tar.gz") })).archive;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function tampered(edit: (entries: RawEntry[]) => RawEntry[]): string {
  return rewrite(archive, join(tempDir(), "bad.tar.gz"), edit);
}

/** Edits the manifest as the tamperer would, keeping it consistent with a changed entry. */
function withManifest(entries: RawEntry[], edit: (manifest: BackupManifest) => void): RawEntry[] {
  return replaceBody(entries, MANIFEST_ENTRY, (body) => {
    const manifest = JSON.parse(body.toString("utf8")) as BackupManifest;
    edit(manifest);
    return Buffer.from(JSON.stringify(manifest));
  });
}

async function failure(file: string): Promise<string> {
  const report = await verifyBackup(file);
  expect(report.ok).toBe(false);
  expect(report.firstProblem).toBe(report.problems[0]?.message);
  return report.firstProblem as string;
}

describe("verifyBackup", () => {
  it("passes a genuine archive, entry by entry", async () => {
    const report = await verifyBackup(archive);
    expect(report).toMatchObject({ ok: true, problems: [], firstProblem: null, compressed: true });
    expect(report.entries.map((e) => [e.path, e.kind, e.status])).toEqual([
      ["databases/state/state.sqlite", "database", "ok"],
      [AGENT, "database", "ok"],
      ["databases/agents/research/agent/agent.sqlite", "database", "ok"],
      ["files/config.json", "file", "ok"],
      ["files/credentials/token", "file", "ok"],
      [MANIFEST_ENTRY, "manifest", "ok"],
    ]);
    expect(report.entries[1]).toMatchObject({
      role: "agent",
      agentId: "main",
      integrityCheck: "ok",
    });
  });

  it("names a snapshot with one flipped byte", async () => {
    const file = tampered((entries) =>
      replaceBody(entries, AGENT, (body) => {
        body[body.length - 100] = (body[body.length - 100] as number) ^ 0xff;
        return body;
      }),
    );
    expect(await failure(file)).toMatch(
      /^entry "databases\/agents\/main\/agent\/agent\.sqlite": SHA-256 mismatch/,
    );
  });

  it("names a damaged snapshot even when its hash was updated to match", async () => {
    const file = tampered((entries) => {
      let hash = "";
      const damaged = replaceBody(entries, AGENT, (body) => {
        body.fill(0x41, 4096, 8192); // the second page: a b-tree page of the schema
        hash = createHash("sha256").update(body).digest("hex");
        return body;
      });
      return withManifest(damaged, (manifest) => {
        const db = manifest.databases.find((d) => d.snapshotPath === AGENT);
        if (db) db.sha256 = hash;
      });
    });
    expect(await failure(file)).toMatch(
      /^entry "databases\/agents\/main\/agent\/agent\.sqlite": integrity_check failed/,
    );
  });

  it("reports a truncated archive", async () => {
    const bytes = readFileSync(archive);
    const cut = join(tempDir(), "cut.tar.gz");
    writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    expect(await failure(cut)).toMatch(/truncated or corrupt \(gzip: unexpected end of file\)/);
    const plain = join(tempDir(), "cut.tar");
    const tar = gunzipSync(bytes);
    writeFileSync(plain, tar.subarray(0, 4096));
    expect(await failure(plain)).toMatch(/Truncated input/);
  });

  it("reports a missing manifest, an unlisted entry and a missing entry", async () => {
    const noManifest = tampered((entries) => entries.filter((e) => e.path !== MANIFEST_ENTRY));
    expect(await failure(noManifest)).toBe("manifest.json is missing from the archive");
    const report = await verifyBackup(noManifest);
    expect(report.entries.every((e) => e.status === "unverified")).toBe(true);

    const extra = tampered((entries) => [
      { path: "files/extra.txt", body: Buffer.from("x") },
      ...entries,
    ]);
    expect(await failure(extra)).toBe('entry "files/extra.txt": it is not in the manifest');

    const missing = tampered((entries) => entries.filter((e) => e.path !== "files/config.json"));
    expect(await failure(missing)).toBe(
      'entry "files/config.json": the manifest lists it, but it is missing from the archive',
    );
  });

  it("refuses escaping names and links, naming each entry", async () => {
    const cases: Array<[RawEntry, RegExp]> = [
      [
        { path: "../escape", body: Buffer.from("x") },
        /^entry "\.\.\/escape": the path has a "\.\." segment/,
      ],
      [{ path: "files/../../escape", body: Buffer.from("x") }, /"\.\." segment/],
      [{ path: "/tmp/evil", body: Buffer.from("x") }, /^entry "\/tmp\/evil": the path is absolute/],
      [
        {
          path: "files/link",
          body: Buffer.alloc(0),
          type: "SymbolicLink",
          linkpath: "/etc/passwd",
        },
        /^entry "files\/link": a symbolic link \(to "\/etc\/passwd"\) is refused/,
      ],
      [
        { path: "files/hard", body: Buffer.alloc(0), type: "Link", linkpath: "files/config.json" },
        /^entry "files\/hard": a hard link \(to "files\/config\.json"\) is refused/,
      ],
      [
        { path: "files/dir", body: Buffer.alloc(0), type: "Directory" },
        /a Directory entry is refused/,
      ],
    ];
    for (const [hostile, message] of cases) {
      expect(await failure(tampered((entries) => [hostile, ...entries]))).toMatch(message);
    }
    const twice = tampered((entries) => [
      ...entries.slice(0, 4),
      entries[3] as RawEntry,
      ...entries.slice(4),
    ]);
    expect(await failure(twice)).toBe('entry "files/config.json": it appears more than once');
  });

  it("checks schema versions against the manifest and this release", async () => {
    const mislabelled = tampered((entries) =>
      withManifest(entries, (manifest) => {
        (manifest.databases[0] as { schemaVersion: number }).schemaVersion = 99;
      }),
    );
    expect(await failure(mislabelled)).toMatch(
      /state\.sqlite": schema version \d+ differs from the manifest's 99/,
    );
    const newer = tampered((entries) => {
      let hash = "";
      const bumped = replaceBody(entries, "databases/state/state.sqlite", (body) => {
        body.writeUInt32BE(99, 60); // the header's user_version
        hash = createHash("sha256").update(body).digest("hex");
        return body;
      });
      return withManifest(bumped, (manifest) => {
        Object.assign(manifest.databases[0] as object, { schemaVersion: 99, sha256: hash });
      });
    });
    expect(await failure(newer)).toMatch(
      /state\.sqlite": schema version 99 is newer than this agentstate supports \(\d+\); upgrade/,
    );
  });

  it("reports an invalid manifest", async () => {
    const broken = tampered((entries) =>
      replaceBody(entries, MANIFEST_ENTRY, () => Buffer.from("{")),
    );
    expect(await failure(broken)).toMatch(
      /^entry "manifest\.json": manifest\.json is not valid: not JSON/,
    );
  });

  it("throws for misuse, not for a bad archive, and leaves no temp files", async () => {
    // A temp root of this test's own: other test files verify archives in parallel processes,
    // and their work directories come and go in the shared one.
    const previousTmp = process.env.TMPDIR;
    process.env.TMPDIR = tempDir();
    onTestFinished(() => {
      if (previousTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previousTmp;
    });
    const before = readdirSync(tmpdir()).filter((n) => n.startsWith("agentstate-verify-")).length;
    await expect(verifyBackup(join(tempDir(), "none.tar.gz"))).rejects.toSatisfy((e) =>
      isStateError(e, "E_NOT_FOUND"),
    );
    await expect(verifyBackup(tempDir())).rejects.toSatisfy((e) =>
      isStateError(e, "E_INVALID_ARGUMENT"),
    );
    await expect(verifyBackup(42 as never)).rejects.toThrow(TypeError);
    const junk = join(tempDir(), "junk.tar.gz");
    writeFileSync(
      junk,
      "this is not an archive at all, just text that goes on for a while".repeat(20),
    );
    expect(await failure(junk)).toMatch(/Unrecognized archive format|checksum failure/);
    const after = readdirSync(tmpdir()).filter((n) => n.startsWith("agentstate-verify-")).length;
    expect(tmpdir()).toBe(process.env.TMPDIR);
    expect(after).toBe(before);
  });
});
