import { latestSchemaVersion } from "../db/schema.js";
import type { ArchiveScan, ScannedEntry } from "./archive-scan.js";
import { coldArchiveHomePath } from "./cold-archives.js";
import {
  type ColdIndexClaim,
  coldIndexHomePath,
  describeUncovered,
  type UncoveredClaim,
} from "./cold-index-coverage.js";
import {
  type BackupManifest,
  DATABASES_DIR,
  MANIFEST_ENTRY,
  type ManifestControlPlane,
  type ManifestDatabase,
  type ManifestFile,
  type SnapshotRole,
  toArchivePath,
} from "./manifest.js";
import { parseManifest } from "./manifest-parse.js";
import type { SnapshotCheck } from "./snapshot-check.js";

export type VerifiedEntryKind = "database" | "file" | "control-plane" | "manifest" | "unexpected";
/** `unverified`: the entry could not be judged because the manifest is missing or invalid. */
export type VerifiedEntryStatus = "ok" | "bad" | "missing" | "unverified";

export interface VerifiedEntry {
  /** The entry name in the archive. */
  path: string;
  kind: VerifiedEntryKind;
  role: SnapshotRole | null;
  agentId: string | null;
  bytes: number | null;
  sha256: string | null;
  schemaVersion: number | null;
  integrityCheck: string | null;
  status: VerifiedEntryStatus;
  problem: string | null;
}

export interface VerifyProblem {
  /** The entry at fault, or null for damage to the archive as a whole. */
  entry: string | null;
  message: string;
}

export interface Judgement {
  manifest: BackupManifest | null;
  entries: VerifiedEntry[];
  problems: VerifyProblem[];
}

type Expected = ManifestDatabase | ManifestFile | ManifestControlPlane;

function isDatabase(expected: Expected): expected is ManifestDatabase {
  return "snapshotPath" in expected;
}

/** A database, the control plane's dump, or a plain file. */
function kindOf(expected: Expected): VerifiedEntryKind {
  if (isDatabase(expected)) return "database";
  return "backend" in expected ? "control-plane" : "file";
}

function entryName(expected: Expected): string {
  return isDatabase(expected) ? expected.snapshotPath : expected.archivePath;
}

function databaseProblem(want: ManifestDatabase, check: SnapshotCheck | undefined): string | null {
  if (!check) return "the snapshot was not checked";
  if (check.integrityCheck !== "ok") return `integrity_check failed: ${check.integrityCheck}`;
  if (check.schemaVersion !== want.schemaVersion) {
    return `schema version ${check.schemaVersion} differs from the manifest's ${want.schemaVersion}`;
  }
  if (want.role === "other") return null;
  const supported = latestSchemaVersion(want.role);
  if (want.schemaVersion > supported) {
    return `schema version ${want.schemaVersion} is newer than this agentstate supports (${supported}); upgrade agentstate to restore it`;
  }
  if (want.schemaVersion < 1) return "schema version 0: not an initialized agentstate database";
  return null;
}

function contentProblem(
  scanned: ScannedEntry,
  want: Expected,
  check?: SnapshotCheck,
): string | null {
  if (scanned.sha256 === null) return "its body is cut off (the archive is truncated)";
  if (scanned.bytes !== want.bytes)
    return `it holds ${scanned.bytes} bytes, the manifest says ${want.bytes}`;
  if (scanned.sha256 !== want.sha256) {
    return `SHA-256 mismatch: the manifest says ${want.sha256.slice(0, 12)}…, the archive holds ${scanned.sha256.slice(0, 12)}…`;
  }
  return isDatabase(want) ? databaseProblem(want, check) : null;
}

function describe(
  scanned: ScannedEntry,
  want: Expected | undefined,
  check?: SnapshotCheck,
): VerifiedEntry {
  const db = want && isDatabase(want) ? want : null;
  const kind: VerifiedEntryKind =
    scanned.path === MANIFEST_ENTRY ? "manifest" : want ? kindOf(want) : "unexpected";
  return {
    path: scanned.path,
    kind,
    role: db?.role ?? null,
    agentId: db?.agentId ?? null,
    bytes: scanned.bytes,
    sha256: scanned.sha256,
    schemaVersion: check?.schemaVersion ?? null,
    integrityCheck: check?.integrityCheck ?? null,
    status: "ok",
    problem: null,
  };
}

function judgeEntry(
  scanned: ScannedEntry,
  manifest: BackupManifest | null,
  expected: ReadonlyMap<string, Expected>,
  check: SnapshotCheck | undefined,
): VerifiedEntry {
  const want = expected.get(scanned.path);
  const entry = describe(scanned, want, check);
  const problem =
    scanned.problem ??
    (scanned.path === MANIFEST_ENTRY || manifest === null
      ? null
      : want === undefined
        ? "it is not in the manifest"
        : contentProblem(scanned, want, check));
  if (problem) return { ...entry, status: "bad", problem };
  if (manifest === null && scanned.path !== MANIFEST_ENTRY)
    return { ...entry, status: "unverified" };
  return entry;
}

function missingEntry(want: Expected): VerifiedEntry {
  const db = isDatabase(want) ? want : null;
  return {
    path: entryName(want),
    kind: kindOf(want),
    role: db?.role ?? null,
    agentId: db?.agentId ?? null,
    bytes: want.bytes,
    sha256: want.sha256,
    schemaVersion: db?.schemaVersion ?? null,
    integrityCheck: null,
    status: "missing",
    problem: "the manifest lists it, but it is missing from the archive",
  };
}

/** Marks an entry bad, unless it is already: its first problem is the one named. */
function flagEntry(entries: VerifiedEntry[], path: string, problem: string): void {
  const entry = entries.find((e) => e.path === path);
  if (entry && entry.status === "ok") Object.assign(entry, { status: "bad", problem });
}

/**
 * The archive's global database must register exactly the agent databases the archive carries,
 * or the restored home would miss an agent or carry one it cannot open.
 */
function registryProblems(
  manifest: BackupManifest,
  checks: ReadonlyMap<string, SnapshotCheck>,
  entries: VerifiedEntry[],
): void {
  const global = manifest.databases.find((db) => db.role === "global") as ManifestDatabase;
  const registered = checks.get(global.snapshotPath)?.registeredAgents;
  if (!registered) return;
  const carried = new Map(
    manifest.databases.filter((db) => db.role === "agent").map((db) => [db.agentId, db]),
  );
  const flag = (path: string, problem: string) => flagEntry(entries, path, problem);
  for (const [agentId, path] of Object.entries(registered)) {
    const db = carried.get(agentId);
    if (!db || db.homePath !== toArchivePath(path)) {
      flag(
        global.snapshotPath,
        `it registers agent "${agentId}", whose database (${path}) is not in the archive`,
      );
    }
  }
  for (const db of carried.values()) {
    if (!((db.agentId as string) in registered)) {
      flag(
        db.snapshotPath,
        `agent "${db.agentId}" is not registered in the archive's global database`,
      );
    }
  }
}

/**
 * Each cold session an agent snapshot records must have its archive in the backup, byte for byte
 * the file the row names (the row's SHA-256 against the manifest's, which the entry was hashed
 * against): a restored home would otherwise hold a session it cannot read.
 */
function coldArchiveProblems(
  manifest: BackupManifest,
  checks: ReadonlyMap<string, SnapshotCheck>,
  entries: VerifiedEntry[],
): void {
  const files = new Map(manifest.files.map((file) => [file.homePath, file]));
  for (const db of manifest.databases.filter((d) => d.role === "agent")) {
    const refs = checks.get(db.snapshotPath)?.coldArchives ?? [];
    const problems = refs.flatMap((ref) => {
      const homePath = coldArchiveHomePath(db.homePath, ref);
      const file = files.get(homePath);
      if (!file) return [`the archive of a cold session (${homePath}) is not in the backup`];
      if (file.sha256 !== ref.sha256) {
        return [`the archive of a cold session (${homePath}) is not the file its row names`];
      }
      return [];
    });
    if (problems.length > 0) flagEntry(entries, db.snapshotPath, problems.join("; "));
  }
}

/**
 * Which of an agent snapshot's claims the staged snapshot of its cold index (by its entry name)
 * does not cover; throws when its rows cannot be counted.
 */
export type CoverageCounter = (
  entry: string,
  claims: readonly ColdIndexClaim[],
) => UncoveredClaim[];

/** What an intact cold index does not cover of its agent snapshot's claims, or null. */
function coverageProblem(
  count: CoverageCounter,
  entry: string,
  claims: readonly ColdIndexClaim[],
): string | null {
  try {
    const uncovered = count(entry, claims);
    return uncovered.length === 0 ? null : `it ${describeUncovered(uncovered, claims)}`;
  } catch (error) {
    return `its rows cannot be counted: ${(error as Error).message}`;
  }
}

/**
 * The rows each agent snapshot claims must all be in the cold index the backup carries beside it
 * (cold-index-coverage.ts), or the restored home's search would miss cold events. A cold index
 * carried without its agent's database is named too: no claim says which of its rows count.
 */
function coldIndexProblems(
  manifest: BackupManifest,
  checks: ReadonlyMap<string, SnapshotCheck>,
  entries: VerifiedEntry[],
  count: CoverageCounter,
): void {
  const carried = manifest.databases.filter((db) => db.role === "cold-index");
  const coldIndexes = new Map(carried.map((db) => [db.homePath, db]));
  const agents = manifest.databases.filter((db) => db.role === "agent");
  for (const db of agents) {
    const claims = checks.get(db.snapshotPath)?.coldIndexClaims ?? [];
    if (claims.length === 0) continue;
    const homePath = coldIndexHomePath(db.homePath);
    const cold = coldIndexes.get(homePath);
    if (!cold) {
      const problem = `it claims search rows of ${claims.length} cold sessions in its cold index (${homePath}), which is not in the backup`;
      flagEntry(entries, db.snapshotPath, problem);
      continue;
    }
    // A cold index missing from the archive or failing its own check is named for that already.
    if (entries.find((e) => e.path === cold.snapshotPath)?.status !== "ok") continue;
    const problem = coverageProblem(count, cold.snapshotPath, claims);
    if (problem) flagEntry(entries, cold.snapshotPath, problem);
  }
  const agentIds = new Set(agents.map((db) => db.agentId));
  for (const cold of carried.filter((db) => !agentIds.has(db.agentId))) {
    const problem = `it is agent "${cold.agentId}"'s cold index, but that agent's database is not in the archive`;
    flagEntry(entries, cold.snapshotPath, problem);
  }
}

function readManifest(scan: ArchiveScan): {
  manifest: BackupManifest | null;
  problem: string | null;
} {
  if (scan.manifestText === null) {
    const refused = scan.entries.some((entry) => entry.path === MANIFEST_ENTRY);
    return {
      manifest: null,
      problem: refused ? null : `${MANIFEST_ENTRY} is missing from the archive`,
    };
  }
  try {
    return { manifest: parseManifest(scan.manifestText), problem: null };
  } catch (error) {
    return { manifest: null, problem: (error as Error).message };
  }
}

/**
 * Judges a scanned archive against its manifest: every entry present, expected, complete and
 * hashing as listed; every snapshot passing `integrity_check` with a supported schema version;
 * every cold session's archive and search rows carried (`countCoverage` counts the latter).
 */
export function judgeArchive(
  scan: ArchiveScan,
  checks: ReadonlyMap<string, SnapshotCheck>,
  countCoverage: CoverageCounter,
): Judgement {
  const { manifest, problem: manifestProblem } = readManifest(scan);
  const wanted: Expected[] = manifest
    ? [
        ...manifest.databases,
        ...manifest.files,
        ...(manifest.controlPlane ? [manifest.controlPlane] : []),
      ]
    : [];
  const expected = new Map(wanted.map((want) => [entryName(want), want]));
  const entries = scan.entries.map((scanned) =>
    judgeEntry(scanned, manifest, expected, checks.get(scanned.path)),
  );
  const present = new Set(scan.entries.map((scanned) => scanned.path));
  entries.push(...wanted.filter((want) => !present.has(entryName(want))).map(missingEntry));
  if (manifest) {
    registryProblems(manifest, checks, entries);
    coldArchiveProblems(manifest, checks, entries);
    coldIndexProblems(manifest, checks, entries, countCoverage);
  }
  const problems: VerifyProblem[] = scan.damage.map((message) => ({ entry: null, message }));
  const manifestEntry = entries.find((entry) => entry.path === MANIFEST_ENTRY);
  if (manifestProblem && manifestEntry)
    Object.assign(manifestEntry, { status: "bad", problem: manifestProblem });
  if (manifestProblem && !manifestEntry)
    problems.push({ entry: MANIFEST_ENTRY, message: manifestProblem });
  for (const entry of entries) {
    if (entry.problem)
      problems.push({
        entry: entry.path,
        message: `entry ${JSON.stringify(entry.path)}: ${entry.problem}`,
      });
  }
  return { manifest, entries, problems };
}

export function isSnapshotEntry(path: string): boolean {
  return path.startsWith(`${DATABASES_DIR}/`);
}
